#include "gpu/node_snapshot.h"

#include "core/log.h"
#include "core/status_macros.h"
#include "gpu/mig_profile.h"
#include "gpu/topology.h"
#include "host/pci.h"
#include "nvml/status.h"
#include "nvml/system.h"
#include "spdlog/spdlog.h"

namespace gpunode::gpu {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// Keeps a value when NVML has it; logs why not otherwise, since an absent value is expected
// for many fields on many GPUs.
template <typename T>
std::optional<T> Optional(const absl::StatusOr<T>& value) {
  if (value.ok()) return *value;
  if (!nvml::IsNotSupported(value.status())) spdlog::debug("{}", value.status().message());
  return std::nullopt;
}

std::vector<MigDeviceSnapshot> ReadMigDevices(const nvml::Device& gpu,
                                              uint64_t parent_memory_bytes) {
  std::vector<MigDeviceSnapshot> out;
  absl::StatusOr<std::vector<nvml::Device>> migs = gpu.MigDevices();
  if (!migs.ok()) {
    spdlog::warn("MIG devices: {}", migs.status().message());
    return out;
  }
  for (const nvml::Device& mig : *migs) {
    MigDeviceSnapshot snapshot;
    snapshot.uuid = mig.Uuid().value_or("");
    snapshot.gi_id = mig.GpuInstanceId().value_or(0);
    snapshot.ci_id = mig.ComputeInstanceId().value_or(0);
    if (absl::StatusOr<nvmlDeviceAttributes_t> attributes = mig.Attributes(); attributes.ok()) {
      snapshot.profile = MigProfileName(*attributes, parent_memory_bytes);
      snapshot.memory_mib = attributes->memorySizeMB;
    }
    if (absl::StatusOr<nvml::MemoryInfo> memory = mig.Memory(); memory.ok()) {
      snapshot.memory_mib = memory->total_bytes / kMiB;
    }
    out.push_back(std::move(snapshot));
  }
  return out;
}

}  // namespace

absl::StatusOr<NodeSnapshot> ReadNodeSnapshot(const nvml::Library& library,
                                              const core::HostRoot& host) {
  NodeSnapshot node;
  node.driver_version = Optional(nvml::DriverVersion(library));
  if (std::optional<int> cuda = Optional(nvml::CudaDriverVersion(library))) {
    node.cuda_driver_version = nvml::FormatCudaVersion(*cuda);
  }
  ASSIGN_OR_RETURN(unsigned count, nvml::DeviceCount(library));

  std::vector<std::optional<nvml::Device>> devices;
  LinkInputs links;
  for (unsigned index = 0; index < count; ++index) {
    GpuSnapshot gpu;
    gpu.index = index;
    absl::StatusOr<nvml::Device> device = nvml::DeviceAt(library, index);
    absl::StatusOr<std::string> uuid = device.ok() ? device->Uuid() : device.status();
    if (!uuid.ok()) {
      // A GPU that fell off the bus still has its index; report it instead of failing the node.
      spdlog::warn("GPU {}: {}", index, uuid.status().message());
      gpu.lost = true;
      node.gpus.push_back(std::move(gpu));
      devices.emplace_back();
      links.bus_ids.emplace_back();
      links.nvlink_remotes.emplace_back();
      continue;
    }
    gpu.uuid = *uuid;
    gpu.name = device->Name().value_or("");
    if (absl::StatusOr<nvml::PciInfo> pci = device->Pci(); pci.ok()) gpu.pci_bus_id = pci->bus_id;
    gpu.numa_node = Optional(device->NumaNode());
    if (!gpu.numa_node && !gpu.pci_bus_id.empty()) {
      if (absl::StatusOr<host::PciDevice> pci = host::ReadPciDevice(host, gpu.pci_bus_id);
          pci.ok()) {
        gpu.numa_node = pci->numa_node;
      }
    }
    uint64_t total_bytes = 0;
    if (std::optional<nvml::MemoryInfo> memory = Optional(device->Memory())) {
      total_bytes = memory->total_bytes;
      gpu.memory_total_mib = memory->total_bytes / kMiB;
      gpu.memory_used_mib = memory->used_bytes / kMiB;
    }
    gpu.temperature_c = Optional(device->TemperatureC());
    if (std::optional<unsigned> mw = Optional(device->PowerUsageMilliwatts()))
      gpu.power_w = *mw / 1000.0;
    if (std::optional<nvml::UtilizationRates> util = Optional(device->Utilization())) {
      gpu.utilization_gpu_pct = util->gpu_pct;
    }
    gpu.mig_enabled = Optional(device->MigEnabled());
    if (gpu.mig_enabled.value_or(false)) gpu.mig_devices = ReadMigDevices(*device, total_bytes);

    std::vector<std::string> remotes;
    if (std::optional<std::vector<nvml::NvLink>> nvlinks = Optional(device->ActiveNvLinks())) {
      for (const nvml::NvLink& link : *nvlinks) remotes.push_back(link.remote_bus_id);
    }
    links.bus_ids.push_back(gpu.pci_bus_id);
    links.nvlink_remotes.push_back(std::move(remotes));
    devices.emplace_back(*device);
    node.gpus.push_back(std::move(gpu));
  }

  node.topology =
      LinkMatrix(links, [&](size_t a, size_t b) -> absl::StatusOr<nvmlGpuTopologyLevel_t> {
        if (!devices[a] || !devices[b]) return absl::UnavailableError("GPU lost");
        return devices[a]->CommonAncestor(*devices[b]);
      });
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    if (node.gpus[i].lost) {
      for (auto& row : node.topology) row[i].reset();
      for (auto& cell : node.topology[i]) cell.reset();
    }
  }
  return node;
}

}  // namespace gpunode::gpu
