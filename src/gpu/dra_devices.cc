#include "gpu/dra_devices.h"

#include <cctype>
#include <filesystem>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "gpu/mig_profile.h"
#include "host/pci.h"
#include "nvml/device.h"
#include "nvml/mig.h"
#include "nvml/status.h"
#include "nvml/system.h"
#include "spdlog/spdlog.h"

namespace gpunode::gpu {
namespace {

using ordered = nlohmann::ordered_json;

constexpr uint64_t kBytesPerMiB = 1024 * 1024;

ordered StringValue(std::string_view value) { return {{"string", value}}; }
ordered VersionValue(std::string_view value) { return {{"version", value}}; }
ordered Quantity(uint64_t value) { return {{"value", BinaryQuantity(value)}}; }

// What every device of one GPU shares: its product, architecture and the node's versions.
struct GpuFacts {
  ordered common = ordered::object();
  ordered pci = ordered::object();  // the standard PCI attributes, where known
};

// The PCIe root complex of the GPU at sysfs address `address` ("pci0000:00"), as
// k8s.io/dynamic-resource-allocation/deviceattribute finds it: the first "pci*" element of the
// device's resolved sysfs path.
std::optional<std::string> PcieRoot(const core::HostRoot& host, const std::string& address) {
  std::error_code ec;
  std::filesystem::path resolved =
      std::filesystem::canonical(host.Resolve(core::StrCat("/sys/bus/pci/devices/", address)), ec);
  if (ec) return std::nullopt;
  for (const std::filesystem::path& part : resolved) {
    std::string name = part.string();
    if (name.starts_with("pci") && name.find(':') != std::string::npos) return name;
  }
  return std::nullopt;
}

// `host` null: no PCIe roots (they are read from sysfs; the names need none).
absl::StatusOr<GpuFacts> ReadGpuFacts(const nvml::Device& gpu, const core::HostRoot* host,
                                      const ordered& versions) {
  GpuFacts facts;
  ASSIGN_OR_RETURN(std::string name, gpu.Name());
  facts.common["productName"] = StringValue(name);
  absl::StatusOr<nvmlBrandType_t> brand = gpu.Brand();
  if (brand.ok()) facts.common["brand"] = StringValue(nvml::BrandName(*brand));
  absl::StatusOr<unsigned> architecture = gpu.Architecture();
  facts.common["architecture"] =
      StringValue(architecture.ok() ? ArchitectureName(*architecture) : "Unknown");
  if (absl::StatusOr<nvml::ComputeCapability> cc = gpu.CudaComputeCapability(); cc.ok()) {
    facts.common["cudaComputeCapability"] =
        VersionValue(core::StrCat(cc->major, ".", cc->minor, ".0"));
  }
  for (const auto& [key, value] : versions.items()) facts.common[key] = value;
  if (absl::StatusOr<nvml::PciInfo> pci = gpu.Pci(); pci.ok()) {
    std::string address = host::SysfsPciAddress(pci->bus_id);
    facts.pci["resource.kubernetes.io/pciBusID"] = StringValue(address);
    if (std::optional<std::string> root = host ? PcieRoot(*host, address) : std::nullopt) {
      facts.pci["resource.kubernetes.io/pcieRoot"] = StringValue(*root);
    }
  }
  return facts;
}

DraDevice GpuDevice(const nvml::Device& gpu, unsigned index, unsigned minor,
                    const std::string& uuid, const GpuFacts& facts) {
  DraDevice device;
  device.name = core::StrCat("gpu-", minor);
  device.uuid = uuid;
  device.gpu_index = index;
  device.gpu_minor = minor;
  device.gpu_uuid = uuid;
  device.attributes["type"] = StringValue("gpu");
  device.attributes["uuid"] = StringValue(uuid);
  device.attributes.update(facts.common);
  device.attributes.update(facts.pci);
  if (absl::StatusOr<nvml::MemoryInfo> memory = gpu.Memory(); memory.ok()) {
    device.capacity["memory"] = Quantity(memory->total_bytes);
  }
  return device;
}

// The MIG devices of a GPU with MIG on, each with the profile and placement of its GPU instance.
absl::StatusOr<std::vector<DraDevice>> MigDevices(const nvml::Library& library,
                                                  const nvml::Device& gpu, unsigned index,
                                                  unsigned minor, const std::string& uuid,
                                                  const GpuFacts& facts) {
  nvml::MigControl control(&library, gpu.handle());
  ASSIGN_OR_RETURN(std::vector<nvml::GpuInstanceProfile> profiles, control.GpuInstanceProfiles());
  ASSIGN_OR_RETURN(std::vector<nvml::GpuInstance> instances, control.GpuInstances(profiles));
  ASSIGN_OR_RETURN(std::vector<nvml::Device> migs, gpu.MigDevices());
  uint64_t parent_memory = 0;
  if (absl::StatusOr<nvml::MemoryInfo> memory = gpu.Memory(); memory.ok()) {
    parent_memory = memory->total_bytes;
  }
  // NVIDIA's name tells MIG devices apart by their GPU instance alone; a GPU instance split into
  // several compute instances ("1c.3g.40gb" three times) needs the compute instance too.
  std::map<unsigned, int> devices_per_instance;
  for (const nvml::Device& mig : migs) {
    if (absl::StatusOr<unsigned> gi = mig.GpuInstanceId(); gi.ok()) ++devices_per_instance[*gi];
  }
  std::vector<DraDevice> out;
  unsigned position = 0;
  for (const nvml::Device& mig : migs) {
    DraDevice device;
    device.mig_position = position++;
    ASSIGN_OR_RETURN(device.uuid, mig.Uuid());
    ASSIGN_OR_RETURN(unsigned gi, mig.GpuInstanceId());
    ASSIGN_OR_RETURN(unsigned ci, mig.ComputeInstanceId());
    ASSIGN_OR_RETURN(nvmlDeviceAttributes_t attributes, mig.Attributes());
    const nvml::GpuInstance* instance = nullptr;
    for (const nvml::GpuInstance& candidate : instances) {
      if (candidate.id == gi) instance = &candidate;
    }
    const nvml::GpuInstanceProfile* profile = nullptr;
    for (const nvml::GpuInstanceProfile& candidate : profiles) {
      if (instance != nullptr && candidate.id == instance->profile_id) profile = &candidate;
    }
    if (profile == nullptr) {
      return absl::InternalError(core::StrCat("GPU ", index, ": MIG device ", device.uuid,
                                              " is in GPU instance ", gi,
                                              ", which NVML does not list with a profile"));
    }
    std::string profile_name = gpu::MigProfileName(attributes, parent_memory);
    device.name = MigDeviceName(minor, profile_name, profile->id, instance->placement.start);
    if (devices_per_instance[gi] > 1) core::StrAppend(&device.name, "-ci", ci);
    device.gpu_index = index;
    device.gpu_minor = minor;
    device.gpu_uuid = uuid;
    device.gi = gi;
    device.ci = ci;
    device.attributes["type"] = StringValue("mig");
    device.attributes["uuid"] = StringValue(device.uuid);
    device.attributes["parentUUID"] = StringValue(uuid);
    device.attributes["profile"] = StringValue(profile_name);
    device.attributes.update(facts.common);
    device.attributes.update(facts.pci);
    device.capacity["multiprocessors"] = Quantity(profile->multiprocessors);
    device.capacity["copyEngines"] = Quantity(profile->copy_engines);
    device.capacity["decoders"] = Quantity(profile->decoders);
    device.capacity["encoders"] = Quantity(profile->encoders);
    device.capacity["jpegEngines"] = Quantity(profile->jpegs);
    device.capacity["ofaEngines"] = Quantity(profile->ofas);
    device.capacity["memory"] = Quantity(profile->memory_mib * kBytesPerMiB);
    for (unsigned slice = instance->placement.start;
         slice < instance->placement.start + instance->placement.size; ++slice) {
      device.capacity[core::StrCat("memorySlice", slice)] = Quantity(1);
    }
    out.push_back(std::move(device));
  }
  return out;
}

absl::StatusOr<DraNode> ReadDevices(const nvml::Library& library, const core::HostRoot* host) {
  DraNode node;
  ASSIGN_OR_RETURN(node.driver_version, nvml::DriverVersion(library));
  ordered versions = ordered::object();
  if (std::optional<std::string> driver = SemanticVersion(node.driver_version)) {
    versions["driverVersion"] = VersionValue(*driver);
  }
  if (absl::StatusOr<int> cuda = nvml::CudaDriverVersion(library); cuda.ok()) {
    if (std::optional<std::string> version = SemanticVersion(nvml::FormatCudaVersion(*cuda))) {
      versions["cudaDriverVersion"] = VersionValue(*version);
    }
  }
  ASSIGN_OR_RETURN(unsigned count, nvml::DeviceCount(library));
  for (unsigned index = 0; index < count; ++index) {
    absl::StatusOr<nvml::Device> gpu = nvml::DeviceAt(library, index);
    absl::StatusOr<std::string> uuid = gpu.ok() ? gpu->Uuid() : gpu.status();
    absl::StatusOr<unsigned> minor = uuid.ok() ? gpu->MinorNumber() : uuid.status();
    if (!minor.ok()) {
      spdlog::warn("GPU {}: {}; it is not announced", index, std::string(minor.status().message()));
      node.lost.push_back(index);
      continue;
    }
    ASSIGN_OR_RETURN(GpuFacts facts, ReadGpuFacts(*gpu, host, versions));
    absl::StatusOr<bool> mig_enabled = gpu->MigEnabled();
    if (mig_enabled.ok() && *mig_enabled) {
      ASSIGN_OR_RETURN(std::vector<DraDevice> migs,
                       MigDevices(library, *gpu, index, *minor, *uuid, facts));
      for (DraDevice& mig : migs) node.devices.push_back(std::move(mig));
    } else {
      node.devices.push_back(GpuDevice(*gpu, index, *minor, *uuid, facts));
    }
  }
  return node;
}

}  // namespace

absl::StatusOr<DraNode> ReadDraNode(const nvml::Library& library, const core::HostRoot& host) {
  return ReadDevices(library, &host);
}

absl::StatusOr<std::map<std::string, std::string>> DraDeviceNames(const nvml::Library& library) {
  ASSIGN_OR_RETURN(DraNode node, ReadDevices(library, nullptr));
  std::map<std::string, std::string> names;
  for (const DraDevice& device : node.devices) names[device.uuid] = device.name;
  return names;
}

std::optional<std::string> SemanticVersion(std::string_view text) {
  std::vector<std::string> parts;
  for (absl::string_view piece : absl::StrSplit(absl::string_view(text.data(), text.size()), '.')) {
    if (parts.size() == 3) break;
    std::string_view part(piece.data(), piece.size());
    size_t digits = 0;
    while (digits < part.size() && std::isdigit(static_cast<unsigned char>(part[digits]))) {
      ++digits;
    }
    if (digits == 0) break;
    std::string_view number = part.substr(0, digits);
    while (number.size() > 1 && number.front() == '0') number.remove_prefix(1);
    parts.emplace_back(number);
    if (digits != part.size()) break;
  }
  if (parts.empty()) return std::nullopt;
  while (parts.size() < 3) parts.emplace_back("0");
  return core::StrCat(parts[0], ".", parts[1], ".", parts[2]);
}

std::string MigDeviceName(unsigned gpu_minor, std::string_view profile, unsigned profile_id,
                          unsigned placement_start) {
  std::string label;
  for (char c : profile) {
    if (c == '.') continue;
    unsigned char u = static_cast<unsigned char>(c);
    label += std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '-';
  }
  return core::StrCat("gpu-", gpu_minor, "-mig-", label, "-", profile_id, "-", placement_start);
}

std::string ArchitectureName(unsigned architecture) {
  static const std::map<unsigned, const char*> kNames = {
      {2, "Kepler"}, {3, "Maxwell"},      {4, "Pascal"}, {5, "Volta"},      {6, "Turing"},
      {7, "Ampere"}, {8, "Ada Lovelace"}, {9, "Hopper"}, {10, "Blackwell"}, {11, "Orin"}};
  auto it = kNames.find(architecture);
  return it == kNames.end() ? "Unknown" : it->second;
}

std::string BinaryQuantity(uint64_t value) {
  static constexpr const char* kSuffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  size_t suffix = 0;
  while (value != 0 && value % 1024 == 0 && suffix + 1 < std::size(kSuffixes)) {
    value /= 1024;
    ++suffix;
  }
  return core::StrCat(value, kSuffixes[suffix]);
}

}  // namespace gpunode::gpu
