#include "profile_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <utility>

#include "brands.h"
#include "derived_ids.h"
#include "gpu_families.h"
#include "messages.h"
#include "mig_geometry.h"
#include "text_values.h"
#include "timeline.h"
#include "topology_builder.h"
#include "topology_matrix.h"

namespace gpunode::sim {
namespace {

// Bounds on what one profile may ask the simulator to hold.
constexpr size_t kMaxProfileGpus = 256;
constexpr size_t kMaxProcesses = 4096;
constexpr size_t kMaxRetiredPages = 4096;
constexpr size_t kMaxTimelineEvents = 100000;
constexpr size_t kMaxMigDevices = 8;
constexpr uint64_t kMaxMemoryMib = 1ULL << 30;  // 1 PiB
constexpr uint64_t kMaxUnsigned = std::numeric_limits<unsigned>::max();

// Thrown inside this file only, caught by load_profile and turned into its one-line error.
class SchemaError : public std::exception {
 public:
  explicit SchemaError(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// A value in the document together with the path that names it in messages.
struct Field {
  YAML::Node node;
  std::string path;
};
using Fields = std::map<std::string, Field>;

std::string_view kind_of(const YAML::Node& node) {
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  if (node.IsNull()) return "empty";
  return "a scalar";
}

class ProfileReader {
 public:
  explicit ProfileReader(std::string_view source) : source_(source) {}

  NodeModel read(const YAML::Node& root);

 private:
  [[noreturn]] void fail(const YAML::Node& at, std::string_view path, std::string_view what) const {
    int line = at.Mark().line;
    std::string where = line >= 0 ? str_cat(source_, ":", line + 1) : std::string(source_);
    throw SchemaError(path.empty() ? str_cat(where, ": ", what)
                                   : str_cat(where, ": ", path, ": ", what));
  }
  [[noreturn]] void fail(const Field& field, std::string_view what) const {
    fail(field.node, field.path, what);
  }

  // The keys of `map` (which must be a map), each checked against `known`.
  Fields fields(const YAML::Node& map, const std::string& path,
                std::span<const std::string_view> known) const;
  Fields fields(const YAML::Node& map, const std::string& path,
                std::initializer_list<std::string_view> known) const {
    return fields(map, path, std::span(known.begin(), known.size()));
  }
  Fields fields(const Field& field, std::initializer_list<std::string_view> known) const {
    return fields(field.node, field.path, known);
  }
  Fields fields(const Field& field, std::span<const std::string_view> known) const {
    return fields(field.node, field.path, known);
  }

  std::string scalar(const Field& field, std::string_view expected) const;
  uint64_t uint_value(const Field& field, uint64_t max, std::string_view hint) const;
  unsigned unsigned_value(const Field& field, uint64_t max, std::string_view hint) const {
    return static_cast<unsigned>(uint_value(field, std::min(max, kMaxUnsigned), hint));
  }
  uint64_t fixed_value(const Field& field, int decimals, uint64_t max, std::string_view hint) const;
  bool switch_value(const Field& field) const;
  std::string string_value(const Field& field) const;
  SimTime duration_value(const Field& field) const;
  unsigned pstate_value(const Field& field) const;
  nvmlGpuVirtualizationMode_t virtualization_value(const Field& field) const;
  bool license_value(const Field& field) const;
  std::vector<Field> list(const Field& field, size_t max_items, std::string_view item) const;

  void read_gpu(const Fields& f, size_t index, const std::string& profile_name,
                GpuModel& gpu) const;
  void read_memory(const Fields& f, GpuModel& gpu) const;
  void read_ecc(const Field& field, GpuModel& gpu) const;
  ClockSet read_clocks(const Field& field) const;
  void read_utilization(const Field& field, std::optional<unsigned>* gpu,
                        std::optional<unsigned>* memory, std::optional<unsigned>* encoder,
                        std::optional<unsigned>* decoder) const;
  ProcessInfo read_process(const Field& field, bool allow_instance) const;
  void read_mig(const Field& field, GpuModel& gpu) const;
  MigDevice read_mig_device(const Field& field, const GpuModel& gpu, unsigned slot) const;
  TimelineEvent read_event(const Field& field) const;
  void check_processes(const Field& field, const GpuModel& gpu) const;

  std::string_view source_;
};

Fields ProfileReader::fields(const YAML::Node& map, const std::string& path,
                             std::span<const std::string_view> known) const {
  if (!map.IsMap()) {
    fail(map, path, str_cat("is ", kind_of(map), "; expected a map of fields (", join(known), ")"));
  }
  Fields result;
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies: the iterator hands out a proxy whose members do not outlive the statement.
    YAML::Node key = it->first;
    YAML::Node value = it->second;
    std::string name = key.IsScalar() ? key.Scalar() : std::string();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string nearest = key.IsScalar() ? nearest_name(name, known) : std::string();
      fail(key, path,
           str_cat("unknown field ", key.IsScalar() ? quote(name) : std::string(kind_of(key)),
                   nearest.empty() ? std::string() : str_cat(" (did you mean ", nearest, "?)"),
                   "; known fields: ", join(known)));
    }
    std::string child_path = path.empty() ? name : str_cat(path, ".", name);
    if (!result.emplace(name, Field{value, child_path}).second) {
      fail(key, path, str_cat("field ", quote(name), " appears twice; keep one"));
    }
  }
  return result;
}

std::string ProfileReader::scalar(const Field& field, std::string_view expected) const {
  if (!field.node.IsScalar()) fail(field, str_cat("is ", kind_of(field.node), ", not ", expected));
  return field.node.Scalar();
}

uint64_t ProfileReader::uint_value(const Field& field, uint64_t max, std::string_view hint) const {
  std::string text = scalar(field, "an integer");
  auto value = parse_uint(trim(text));
  if (!value) {
    std::string_view t = trim(text);
    if (!t.empty() && t.front() == '-') fail(field, str_cat(quote(text), " is negative; ", hint));
    fail(field, str_cat(quote(text), " is not an integer; ", hint));
  }
  if (*value > max) fail(field, str_cat(quote(text), " is too large; at most ", max));
  return *value;
}

uint64_t ProfileReader::fixed_value(const Field& field, int decimals, uint64_t max,
                                    std::string_view hint) const {
  std::string text = scalar(field, "a number");
  auto value = parse_fixed(trim(text), decimals);
  if (!value) {
    std::string_view t = trim(text);
    if (!t.empty() && t.front() == '-') fail(field, str_cat(quote(text), " is negative; ", hint));
    fail(field, str_cat(quote(text), " is not a number; ", hint));
  }
  if (*value > max) fail(field, str_cat(quote(text), " is too large; ", hint));
  return *value;
}

bool ProfileReader::switch_value(const Field& field) const {
  std::string text = scalar(field, "enabled or disabled");
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "enabled" || lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "disabled" || lower == "false" || lower == "no" || lower == "off") return false;
  fail(field, str_cat(quote(text), " is not a switch; write enabled or disabled"));
}

std::string ProfileReader::string_value(const Field& field) const {
  std::string text = scalar(field, "a string");
  if (trim(text).empty()) fail(field, "is empty; give a value or leave the field out");
  if (text.size() > 256) fail(field, "is longer than 256 characters");
  return text;
}

SimTime ProfileReader::duration_value(const Field& field) const {
  std::string text = scalar(field, "a duration");
  auto duration = parse_duration(text);
  if (!duration)
    fail(field,
         str_cat(quote(text), " is not a duration; write e.g. 250ms, 2s or 1.5m (at most 24h)"));
  return *duration;
}

nvmlGpuVirtualizationMode_t ProfileReader::virtualization_value(const Field& field) const {
  std::string text = scalar(field, "a virtualization mode");
  std::string_view t = trim(text);
  constexpr std::pair<std::string_view, nvmlGpuVirtualizationMode_t> kModes[] = {
      {"none", NVML_GPU_VIRTUALIZATION_MODE_NONE},
      {"passthrough", NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH},
      {"vgpu", NVML_GPU_VIRTUALIZATION_MODE_VGPU},
      {"host_vgpu", NVML_GPU_VIRTUALIZATION_MODE_HOST_VGPU},
      {"host_vsga", NVML_GPU_VIRTUALIZATION_MODE_HOST_VSGA}};
  for (const auto& [name, mode] : kModes) {
    if (t == name) return mode;
  }
  fail(field,
       str_cat(quote(text),
               " is not a virtualization mode; write none, passthrough, vgpu (a vGPU guest), "
               "host_vgpu or host_vsga"));
}

bool ProfileReader::license_value(const Field& field) const {
  std::string text = scalar(field, "licensed or unlicensed");
  std::string_view t = trim(text);
  if (t == "licensed") return true;
  if (t == "unlicensed") return false;
  fail(field, str_cat(quote(text), " is not a licence state; write licensed or unlicensed"));
}

unsigned ProfileReader::pstate_value(const Field& field) const {
  std::string text = scalar(field, "a performance state");
  std::string_view t = trim(text);
  if (t.size() >= 2 && (t[0] == 'P' || t[0] == 'p')) {
    if (auto state = parse_uint(t.substr(1)); state && *state <= 15)
      return static_cast<unsigned>(*state);
  }
  fail(field, str_cat(quote(text), " is not a performance state; write P0 to P15"));
}

std::vector<Field> ProfileReader::list(const Field& field, size_t max_items,
                                       std::string_view item) const {
  if (!field.node.IsSequence())
    fail(field, str_cat("is ", kind_of(field.node), "; expected a list of ", item));
  if (field.node.size() > max_items)
    fail(field, str_cat("has ", field.node.size(), " entries; at most ", max_items));
  std::vector<Field> items;
  const YAML::Node& sequence = field.node;
  for (size_t i = 0; i < sequence.size(); ++i)
    items.push_back({sequence[i], str_cat(field.path, "[", i, "]")});
  return items;
}

ClockSet ProfileReader::read_clocks(const Field& field) const {
  Fields f = fields(field, {"graphics", "sm", "memory", "video"});
  ClockSet clocks;
  const std::array<std::string_view, 4> names = {"graphics", "sm", "memory", "video"};
  for (size_t i = 0; i < names.size(); ++i) {
    if (auto it = f.find(std::string(names[i])); it != f.end()) {
      clocks[i] = unsigned_value(it->second, 100000, "give MHz as a whole number");
    }
  }
  return clocks;
}

void ProfileReader::read_utilization(const Field& field, std::optional<unsigned>* gpu,
                                     std::optional<unsigned>* memory,
                                     std::optional<unsigned>* encoder,
                                     std::optional<unsigned>* decoder) const {
  Fields f = fields(field, {"gpu", "memory", "encoder", "decoder"});
  auto percent = [&](const char* key, std::optional<unsigned>* out) {
    if (auto it = f.find(key); it != f.end())
      *out = unsigned_value(it->second, 100, "give a percentage from 0 to 100");
  };
  percent("gpu", gpu);
  percent("memory", memory);
  percent("encoder", encoder);
  percent("decoder", decoder);
}

void ProfileReader::read_memory(const Fields& f, GpuModel& gpu) const {
  auto total = f.find("memory_mib");
  if (total == f.end()) {
    for (const char* key : {"memory_used_mib", "memory_reserved_mib"}) {
      if (auto it = f.find(key); it != f.end())
        fail(it->second, "needs memory_mib, the total, beside it");
    }
    return;
  }
  constexpr std::string_view kHint = "give MiB as a whole number";
  MemoryInfo memory;
  memory.total_bytes = uint_value(total->second, kMaxMemoryMib, kHint) * kMiB;
  if (auto it = f.find("memory_used_mib"); it != f.end()) {
    memory.used_bytes = uint_value(it->second, kMaxMemoryMib, kHint) * kMiB;
  }
  if (auto it = f.find("memory_reserved_mib"); it != f.end()) {
    memory.reserved_bytes = uint_value(it->second, kMaxMemoryMib, kHint) * kMiB;
  }
  if (memory.used_bytes + memory.reserved_bytes > memory.total_bytes) {
    fail(total->second, str_cat("memory_used_mib + memory_reserved_mib exceed memory_mib (",
                                memory.total_bytes / kMiB,
                                " MiB); used excludes reserved, as nvidia-smi shows it"));
  }
  gpu.memory = memory;
}

void ProfileReader::read_ecc(const Field& field, GpuModel& gpu) const {
  Fields f = fields(field, {"mode", "pending_mode", "corrected_volatile", "uncorrected_volatile",
                            "corrected_aggregate", "uncorrected_aggregate"});
  auto mode = f.find("mode");
  if (mode == f.end()) fail(field, "missing field \"mode\"; write mode: enabled or mode: disabled");
  gpu.ecc_enabled = switch_value(mode->second);
  gpu.ecc_pending = gpu.ecc_enabled;
  if (auto it = f.find("pending_mode"); it != f.end()) gpu.ecc_pending = switch_value(it->second);
  constexpr std::string_view kHint = "give a count as a whole number";
  constexpr uint64_t kMaxCount = 1ULL << 62;  // room for the timeline to add to it
  auto counter = [&](const char* key, std::optional<uint64_t>& out) {
    if (auto it = f.find(key); it != f.end()) {
      if (!*gpu.ecc_enabled) fail(it->second, "ECC counters need mode: enabled");
      out = uint_value(it->second, kMaxCount, kHint);
    } else if (*gpu.ecc_enabled) {
      out = 0;  // an ECC-enabled GPU counts from zero; the field just did not say
    }
  };
  counter("corrected_volatile", gpu.ecc.corrected_volatile);
  counter("uncorrected_volatile", gpu.ecc.uncorrected_volatile);
  counter("corrected_aggregate", gpu.ecc.corrected_aggregate);
  counter("uncorrected_aggregate", gpu.ecc.uncorrected_aggregate);
}

ProcessInfo ProfileReader::read_process(const Field& field, bool allow_instance) const {
  Fields f = fields(field, {"pid", "used_memory_mib", "gpu_instance_id", "compute_instance_id"});
  ProcessInfo process;
  auto pid = f.find("pid");
  if (pid == f.end()) fail(field, "missing field \"pid\"; every process needs its pid");
  process.pid = unsigned_value(pid->second, 0x7FFFFFFF, "give the pid as a whole number");
  if (auto it = f.find("used_memory_mib"); it != f.end()) {
    process.used_bytes = uint_value(it->second, kMaxMemoryMib, "give MiB as a whole number") * kMiB;
  }
  for (const char* key : {"gpu_instance_id", "compute_instance_id"}) {
    auto it = f.find(key);
    if (it == f.end()) continue;
    if (!allow_instance) fail(it->second, "applies only to processes on a MIG-enabled GPU");
    unsigned id = unsigned_value(it->second, 64, "give the MIG instance id as a whole number");
    (std::string_view(key) == "gpu_instance_id" ? process.gpu_instance_id
                                                : process.compute_instance_id) = id;
  }
  return process;
}

MigDevice ProfileReader::read_mig_device(const Field& field, const GpuModel& gpu,
                                         unsigned slot) const {
  Fields f = fields(
      field, {"profile", "gpu_instance_id", "compute_instance_id", "memory_mib", "memory_used_mib",
              "multiprocessors", "copy_engines", "decoders", "encoders", "jpegs", "ofas", "uuid"});
  MigDevice mig;
  mig.index = slot;
  auto profile = f.find("profile");
  if (profile == f.end())
    fail(field, "missing field \"profile\"; name the instance profile, e.g. profile: 1g.10gb");
  mig.profile = string_value(profile->second);
  auto slices = parse_mig_profile_name(mig.profile);
  if (!slices) {
    fail(profile->second,
         str_cat(quote(mig.profile),
                 " is not a MIG profile name; write <gi>g.<GB>gb or <ci>c.<gi>g.<GB>gb"));
  }
  mig.gpu_instance_slices = slices->gpu_instance;
  mig.compute_instance_slices = slices->compute_instance;
  for (const char* key : {"gpu_instance_id", "compute_instance_id"}) {
    auto it = f.find(key);
    if (it == f.end())
      fail(field, str_cat("missing field ", quote(key),
                          "; every MIG device needs its GPU and compute instance ids"));
    unsigned id = unsigned_value(it->second, 64, "give the instance id as a whole number");
    (std::string_view(key) == "gpu_instance_id" ? mig.gpu_instance_id : mig.compute_instance_id) =
        id;
  }
  std::optional<MigProfileAttributes> known = known_mig_profile(gpu.name.value_or(""), mig.profile);
  MigProfileAttributes attributes = known.value_or(MigProfileAttributes{});
  constexpr std::string_view kCountHint = "give a count as a whole number";
  struct Attribute {
    const char* key;
    unsigned* out;
    uint64_t max;
  };
  unsigned memory_mib = attributes.memory_mib;
  const std::array<Attribute, 7> fields_to_read = {{
      {"memory_mib", &memory_mib, kMaxMemoryMib},
      {"multiprocessors", &attributes.multiprocessors, 1024},
      {"copy_engines", &attributes.copy_engines, 64},
      {"decoders", &attributes.decoders, 64},
      {"encoders", &attributes.encoders, 64},
      {"jpegs", &attributes.jpegs, 64},
      {"ofas", &attributes.ofas, 64},
  }};
  for (const Attribute& a : fields_to_read) {
    if (auto it = f.find(a.key); it != f.end()) {
      *a.out = unsigned_value(it->second, a.max, kCountHint);
    } else if (!known) {
      fail(field,
           str_cat("missing field ", quote(a.key), ": the simulator has no table of MIG profile ",
                   quote(mig.profile), " for ", quote(gpu.name.value_or("this GPU")),
                   ", so give memory_mib, multiprocessors, copy_engines, decoders, encoders, jpegs "
                   "and ofas"));
    }
  }
  mig.memory.total_bytes = uint64_t{memory_mib} * kMiB;
  if (auto it = f.find("memory_used_mib"); it != f.end()) {
    mig.memory.used_bytes =
        uint_value(it->second, memory_mib, "give MiB as a whole number, at most memory_mib") * kMiB;
  }
  mig.multiprocessors = attributes.multiprocessors;
  mig.copy_engines = attributes.copy_engines;
  mig.decoders = attributes.decoders;
  mig.encoders = attributes.encoders;
  mig.jpegs = attributes.jpegs;
  mig.ofas = attributes.ofas;
  // Consumers name the instance from these attributes; they must give back the stated name.
  std::string named = mig_profile_name(mig.gpu_instance_slices, mig.compute_instance_slices,
                                       mig.memory.total_bytes, gpu.memory->total_bytes);
  if (named != mig.profile) {
    fail(field, str_cat("memory_mib ", memory_mib, " of a ", gpu.memory->total_bytes / kMiB,
                        " MiB GPU makes NVIDIA's naming rule call this instance ", named, ", not ",
                        mig.profile, "; fix memory_mib or the profile name"));
  }
  if (auto it = f.find("uuid"); it != f.end()) {
    mig.uuid = string_value(it->second);
    if (mig.uuid.rfind("MIG-", 0) != 0)
      fail(it->second, str_cat(quote(mig.uuid), " is not a MIG UUID; write MIG-<uuid>"));
  }
  return mig;
}

void ProfileReader::read_mig(const Field& field, GpuModel& gpu) const {
  Fields f = fields(field, {"mode", "pending_mode", "max_devices", "devices"});
  auto mode = f.find("mode");
  if (mode == f.end()) fail(field, "missing field \"mode\"; write mode: enabled or mode: disabled");
  gpu.mig_enabled = switch_value(mode->second);
  gpu.mig_pending = gpu.mig_enabled;
  if (auto it = f.find("pending_mode"); it != f.end()) gpu.mig_pending = switch_value(it->second);
  gpu.max_mig_devices = max_mig_devices_for(gpu.name.value_or(""));
  if (auto it = f.find("max_devices"); it != f.end()) {
    gpu.max_mig_devices = unsigned_value(it->second, kMaxMigDevices, "give a count from 1 to 8");
    if (gpu.max_mig_devices == 0) fail(it->second, "must be at least 1");
  }
  auto devices = f.find("devices");
  if (devices == f.end()) return;
  if (!*gpu.mig_enabled) fail(devices->second, "MIG devices need mode: enabled");
  if (!gpu.memory)
    fail(devices->second, "MIG devices need the GPU's memory_mib, which their sizes are shares of");
  std::vector<Field> items = list(devices->second, gpu.max_mig_devices, "MIG devices");
  std::map<unsigned, unsigned> gi_slices;  // by GPU instance id
  for (size_t i = 0; i < items.size(); ++i) {
    MigDevice mig = read_mig_device(items[i], gpu, static_cast<unsigned>(i));
    for (const MigDevice& other : gpu.mig_devices) {
      if (other.gpu_instance_id == mig.gpu_instance_id &&
          other.compute_instance_id == mig.compute_instance_id) {
        fail(items[i],
             str_cat("gpu_instance_id ", mig.gpu_instance_id, " and compute_instance_id ",
                     mig.compute_instance_id, " are already used by devices[", other.index, "]"));
      }
      if (other.gpu_instance_id == mig.gpu_instance_id &&
          other.gpu_instance_slices != mig.gpu_instance_slices) {
        fail(items[i], str_cat("GPU instance ", mig.gpu_instance_id, " is ",
                               other.gpu_instance_slices, " slices in devices[", other.index,
                               "] but ", mig.gpu_instance_slices, " here"));
      }
    }
    gi_slices[mig.gpu_instance_id] = mig.gpu_instance_slices;
    gpu.mig_devices.push_back(std::move(mig));
  }
  unsigned used = 0;
  for (const auto& [id, slices] : gi_slices) used += slices;
  if (used > gpu.max_mig_devices) {
    fail(devices->second,
         str_cat("the GPU instances take ", used, " slices but the GPU has ", gpu.max_mig_devices));
  }
}

void ProfileReader::check_processes(const Field& field, const GpuModel& gpu) const {
  std::set<unsigned> pids;
  std::vector<Field> items = list(field, kMaxProcesses, "processes");
  for (size_t i = 0; i < gpu.processes.size(); ++i) {
    const ProcessInfo& p = gpu.processes[i];
    if (!pids.insert(p.pid).second) fail(items[i], str_cat("pid ", p.pid, " is listed twice"));
    if (!gpu.mig_enabled.value_or(false)) continue;
    bool found =
        std::any_of(gpu.mig_devices.begin(), gpu.mig_devices.end(), [&](const MigDevice& m) {
          return m.gpu_instance_id == p.gpu_instance_id &&
                 m.compute_instance_id == p.compute_instance_id;
        });
    if (!found) {
      fail(items[i],
           "on a MIG-enabled GPU a process runs in a MIG device; give the gpu_instance_id and "
           "compute_instance_id of one of mig.devices");
    }
  }
}

void ProfileReader::read_gpu(const Fields& f, size_t index, const std::string& profile_name,
                             GpuModel& gpu) const {
  auto get = [&](const char* key) -> const Field* {
    auto it = f.find(key);
    return it == f.end() ? nullptr : &it->second;
  };
  if (const Field* name = get("name")) {
    gpu.name = string_value(*name);
    if (gpu.name->size() >= NVML_DEVICE_NAME_BUFFER_SIZE) {
      fail(*name,
           str_cat("is longer than NVML's ", NVML_DEVICE_NAME_BUFFER_SIZE - 1, " characters"));
    }
  }
  const Field* bus_id = get("bus_id");  // the caller made sure it is there
  std::string bus_text = string_value(*bus_id);
  gpu.pci = parse_bus_id(trim(bus_text));
  if (!gpu.pci)
    fail(*bus_id, str_cat(quote(bus_text), " is not a PCI bus id; write e.g. 0000:1B:00.0"));
  if (const Field* id = get("pci_device_id")) {
    unsigned device = unsigned_value(*id, 0xFFFF, "give the 16-bit PCI device id, e.g. 0x2330");
    gpu.pci_device_id = (device << 16) | 0x10DEu;
  }
  if (const Field* id = get("pci_subsystem_id")) {
    gpu.pci_subsystem_id =
        unsigned_value(*id, 0xFFFFFFFF, "give the 32-bit subsystem id, e.g. 0x16C110DE");
  }
  gpu.minor_number = static_cast<unsigned>(index);
  if (const Field* minor = get("minor_number"))
    gpu.minor_number = unsigned_value(*minor, 255, "give a whole number");
  if (const Field* numa = get("numa_node"))
    gpu.numa_node = unsigned_value(*numa, 4095, "give the NUMA node number");
  if (const Field* uuid = get("uuid")) {
    std::string text = string_value(*uuid);
    bool shaped = text.size() == 40 && text.rfind("GPU-", 0) == 0;
    for (size_t i = 4; shaped && i < text.size(); ++i) {
      bool dash = i == 12 || i == 17 || i == 22 || i == 27;
      shaped = dash ? text[i] == '-' : std::isxdigit(static_cast<unsigned char>(text[i])) != 0;
    }
    if (!shaped)
      fail(*uuid, str_cat(quote(text),
                          " is not a GPU UUID; write GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"));
    gpu.uuid = text;
  } else {
    gpu.uuid = derived_uuid("GPU", str_cat(profile_name, "/", index, "/", gpu.pci->bus_id()));
  }
  if (const Field* serial = get("serial")) {
    gpu.serial = string_value(*serial);
    if (gpu.serial->size() >= NVML_DEVICE_SERIAL_BUFFER_SIZE) {
      fail(*serial,
           str_cat("is longer than NVML's ", NVML_DEVICE_SERIAL_BUFFER_SIZE - 1, " characters"));
    }
  }
  if (const Field* arch = get("architecture")) {
    std::string text = string_value(*arch);
    gpu.architecture = architecture_from_name(text);
    if (!gpu.architecture) {
      fail(*arch, str_cat(quote(text),
                          " is not an architecture; write Kepler, Maxwell, Pascal, Volta, Turing, "
                          "Ampere, Ada, Hopper or Blackwell"));
    }
  }
  if (const Field* cc = get("compute_capability")) {
    std::string text = scalar(*cc, "a compute capability");
    size_t dot = text.find('.');
    auto major = parse_uint(text.substr(0, dot));
    auto minor = dot == std::string::npos ? std::nullopt : parse_uint(text.substr(dot + 1));
    if (!major || !minor || *major > 99 || *minor > 9) {
      fail(
          *cc,
          str_cat(quote(text),
                  " is not a compute capability; write it in quotes as major.minor, e.g. \"9.0\""));
    }
    gpu.compute_capability = std::pair{static_cast<int>(*major), static_cast<int>(*minor)};
  } else {
    gpu.compute_capability = derived_compute_capability(gpu.architecture, gpu.pci_device_id);
  }
  read_memory(f, gpu);
  if (const Field* t = get("temperature_c"))
    gpu.temperature_c = unsigned_value(*t, 200, "give degrees C as a whole number");
  if (const Field* t = get("memory_temperature_c")) {
    gpu.memory_temperature_c = unsigned_value(*t, 200, "give degrees C as a whole number");
  }
  constexpr std::string_view kWattsHint = "give watts as a number, e.g. 71.5";
  constexpr uint64_t kMaxMilliwatts = 100'000'000;  // 100 kW
  if (const Field* p = get("power_draw_w"))
    gpu.power_mw = static_cast<unsigned>(fixed_value(*p, 3, kMaxMilliwatts, kWattsHint));
  if (const Field* p = get("power_limit_w")) {
    gpu.power_limit_mw = static_cast<unsigned>(fixed_value(*p, 3, kMaxMilliwatts, kWattsHint));
  }
  if (const Field* e = get("energy_j")) {
    gpu.energy_mj = fixed_value(*e, 3, 1ULL << 60, "give joules as a number, e.g. 123456.7");
  }
  if (const Field* u = get("utilization")) {
    read_utilization(*u, &gpu.utilization_gpu, &gpu.utilization_memory, &gpu.utilization_encoder,
                     &gpu.utilization_decoder);
  }
  if (const Field* c = get("clocks")) gpu.clocks = read_clocks(*c);
  if (const Field* c = get("max_clocks")) gpu.max_clocks = read_clocks(*c);
  if (const Field* e = get("ecc")) read_ecc(*e, gpu);
  if (const Field* p = get("persistence_mode")) gpu.persistence_mode = switch_value(*p);
  if (const Field* v = get("virtualization_mode"))
    gpu.virtualization_mode = virtualization_value(*v);
  if (const Field* l = get("vgpu_license")) {
    if (gpu.virtualization_mode != NVML_GPU_VIRTUALIZATION_MODE_VGPU)
      fail(*l, "is only for a vGPU guest; add virtualization_mode: vgpu or leave it out");
    gpu.vgpu_licensed = license_value(*l);
  }
  gpu.brand =
      brand_from_product_name(gpu.name.value_or(""), gpu.architecture, gpu.virtualization_mode);
  if (const Field* p = get("pstate")) gpu.pstate = pstate_value(*p);
  if (const Field* fan = get("fan_percent"))
    gpu.fan_percent = unsigned_value(*fan, 100, "give a percentage from 0 to 100");
  if (const Field* r = get("pcie_replay_counter"))
    gpu.pcie_replay_counter = unsigned_value(*r, kMaxUnsigned, "give a count");
  if (const Field* r = get("retired_pages")) {
    Fields pages = fields(*r, {"single_bit", "double_bit"});
    RetiredPages retired;
    for (auto& [key, out] : {std::pair{"single_bit", &retired.single_bit_addresses},
                             std::pair{"double_bit", &retired.double_bit_addresses}}) {
      auto it = pages.find(key);
      if (it == pages.end()) continue;
      for (const Field& address : list(it->second, kMaxRetiredPages, "page addresses")) {
        out->push_back(uint_value(address, std::numeric_limits<uint64_t>::max(),
                                  "give a page address, e.g. 0x1a2b000"));
      }
    }
    gpu.retired_pages = std::move(retired);
  }
  if (const Field* r = get("remapped_rows")) {
    Fields rows = fields(*r, {"corrected", "uncorrected", "pending", "failure"});
    RemappedRows remapped;
    if (auto it = rows.find("corrected"); it != rows.end())
      remapped.corrected = unsigned_value(it->second, 65535, "give a count");
    if (auto it = rows.find("uncorrected"); it != rows.end()) {
      remapped.uncorrected = unsigned_value(it->second, 65535, "give a count");
    }
    if (auto it = rows.find("pending"); it != rows.end())
      remapped.pending = switch_value(it->second);
    if (auto it = rows.find("failure"); it != rows.end())
      remapped.failure = switch_value(it->second);
    gpu.remapped_rows = remapped;
  }
  if (const Field* m = get("mig")) read_mig(*m, gpu);
  if (const Field* p = get("processes")) {
    bool mig = gpu.mig_enabled.value_or(false);
    for (const Field& item : list(*p, kMaxProcesses, "processes"))
      gpu.processes.push_back(read_process(item, mig));
    check_processes(*p, gpu);
  }
  if (gpu.mig_enabled.value_or(false)) {
    for (MigDevice& mig : gpu.mig_devices) {
      if (mig.uuid.empty()) {
        mig.uuid = derived_uuid(
            "MIG", str_cat(*gpu.uuid, "/", mig.gpu_instance_id, "/", mig.compute_instance_id));
      }
    }
  }
}

TimelineEvent ProfileReader::read_event(const Field& field) const {
  Fields f =
      fields(field, {"at", "gpu", "event", "xid", "gpu_instance_id", "compute_instance_id", "pid",
                     "used_memory_mib", "utilization", "temperature_c", "power_draw_w", "pstate",
                     "clocks", "over", "corrected", "uncorrected", "pending", "failure"});
  TimelineEvent event;
  for (const char* key : {"at", "gpu", "event"}) {
    if (!f.contains(key)) {
      fail(field,
           str_cat("missing field ", quote(key), "; every timeline entry needs at, gpu and event"));
    }
  }
  event.at = duration_value(f.at("at"));
  event.gpu = unsigned_value(f.at("gpu"), kMaxProfileGpus, "give the GPU index, counted from 0");
  std::string kind_text = scalar(f.at("event"), "an event name");
  auto kind = parse_timeline_kind(kind_text);
  if (!kind)
    fail(f.at("event"),
         str_cat(quote(kind_text), " is not an event; use one of ", timeline_kind_names()));
  event.kind = *kind;
  // Which optional fields each event takes; anything else is a mistake worth naming.
  std::set<std::string> allowed;
  switch (event.kind) {
    case TimelineKind::kXid:
      allowed = {"xid", "gpu_instance_id", "compute_instance_id"};
      break;
    case TimelineKind::kProcessStart:
      allowed = {"pid", "used_memory_mib", "gpu_instance_id", "compute_instance_id"};
      break;
    case TimelineKind::kProcessExit:
      allowed = {"pid"};
      break;
    case TimelineKind::kSet:
      allowed = {"utilization", "temperature_c", "power_draw_w", "pstate", "clocks", "over"};
      break;
    case TimelineKind::kEcc:
      allowed = {"corrected", "uncorrected"};
      break;
    case TimelineKind::kRemap:
      allowed = {"corrected", "uncorrected", "pending", "failure"};
      break;
    case TimelineKind::kFallOffBus:
    case TimelineKind::kRecover:
      break;
  }
  for (const auto& [key, value] : f) {
    if (key != "at" && key != "gpu" && key != "event" && !allowed.contains(key)) {
      fail(value, str_cat("does not apply to event ", timeline_kind_name(event.kind),
                          allowed.empty() ? std::string("; it takes only at and gpu")
                                          : str_cat("; it takes ", join(allowed))));
    }
  }
  auto instance = [&](const char* key, unsigned& out) {
    if (auto it = f.find(key); it != f.end())
      out = unsigned_value(it->second, 64, "give the MIG instance id");
  };
  switch (event.kind) {
    case TimelineKind::kXid:
      if (!f.contains("xid"))
        fail(field, "missing field \"xid\"; give the Xid number, e.g. xid: 48");
      event.xid = uint_value(f.at("xid"), 0xFFFFFFFF, "give the Xid as a whole number");
      instance("gpu_instance_id", event.gpu_instance_id);
      instance("compute_instance_id", event.compute_instance_id);
      break;
    case TimelineKind::kProcessStart:
    case TimelineKind::kProcessExit: {
      if (!f.contains("pid")) fail(field, "missing field \"pid\"");
      event.process.pid = unsigned_value(f.at("pid"), 0x7FFFFFFF, "give the pid as a whole number");
      if (auto it = f.find("used_memory_mib"); it != f.end()) {
        event.process.used_bytes =
            uint_value(it->second, kMaxMemoryMib, "give MiB as a whole number") * kMiB;
      }
      instance("gpu_instance_id", event.process.gpu_instance_id);
      instance("compute_instance_id", event.process.compute_instance_id);
      break;
    }
    case TimelineKind::kSet: {
      MetricChange& change = event.change;
      if (auto it = f.find("utilization"); it != f.end()) {
        read_utilization(it->second, &change.utilization_gpu, &change.utilization_memory,
                         &change.utilization_encoder, &change.utilization_decoder);
      }
      if (auto it = f.find("temperature_c"); it != f.end()) {
        change.temperature_c = unsigned_value(it->second, 200, "give degrees C as a whole number");
      }
      if (auto it = f.find("power_draw_w"); it != f.end()) {
        change.power_mw = static_cast<unsigned>(
            fixed_value(it->second, 3, 100'000'000, "give watts as a number"));
      }
      if (auto it = f.find("pstate"); it != f.end()) change.pstate = pstate_value(it->second);
      if (auto it = f.find("clocks"); it != f.end()) change.clocks = read_clocks(it->second);
      if (auto it = f.find("over"); it != f.end()) change.over = duration_value(it->second);
      break;
    }
    case TimelineKind::kEcc:
      if (auto it = f.find("corrected"); it != f.end())
        event.corrected = uint_value(it->second, 1 << 20, "give a count");
      if (auto it = f.find("uncorrected"); it != f.end()) {
        event.uncorrected = uint_value(it->second, 1 << 20, "give a count");
      }
      if (event.corrected == 0 && event.uncorrected == 0)
        fail(field, "give corrected or uncorrected, the errors to add");
      break;
    case TimelineKind::kRemap:
      if (auto it = f.find("corrected"); it != f.end())
        event.corrected = uint_value(it->second, 65535, "give a count of rows");
      if (auto it = f.find("uncorrected"); it != f.end())
        event.uncorrected = uint_value(it->second, 65535, "give a count of rows");
      if (auto it = f.find("pending"); it != f.end())
        event.remap_pending = switch_value(it->second);
      if (auto it = f.find("failure"); it != f.end())
        event.remap_failure = switch_value(it->second);
      if (f.size() == 3)
        fail(field, "give pending, failure, corrected or uncorrected, what the remapper changes");
      break;
    case TimelineKind::kFallOffBus:
    case TimelineKind::kRecover:
      break;
  }
  return event;
}

constexpr std::array<std::string_view, 32> kGpuFields = {"name",
                                                         "uuid",
                                                         "serial",
                                                         "bus_id",
                                                         "pci_device_id",
                                                         "pci_subsystem_id",
                                                         "minor_number",
                                                         "numa_node",
                                                         "architecture",
                                                         "compute_capability",
                                                         "memory_mib",
                                                         "memory_used_mib",
                                                         "memory_reserved_mib",
                                                         "temperature_c",
                                                         "memory_temperature_c",
                                                         "power_draw_w",
                                                         "power_limit_w",
                                                         "energy_j",
                                                         "utilization",
                                                         "clocks",
                                                         "max_clocks",
                                                         "ecc",
                                                         "persistence_mode",
                                                         "virtualization_mode",
                                                         "vgpu_license",
                                                         "pstate",
                                                         "fan_percent",
                                                         "pcie_replay_counter",
                                                         "retired_pages",
                                                         "remapped_rows",
                                                         "processes",
                                                         "mig"};

NodeModel ProfileReader::read(const YAML::Node& root) {
  if (!root.IsMap()) {
    fail(root, "",
         str_cat("the document is ", kind_of(root),
                 "; a profile is a map with at least gpus: (see docs/SIMULATOR.md)"));
  }
  Fields top = fields(root, "",
                      {"name", "description", "driver_version", "cuda_driver_version",
                       "nvml_version", "gpu_defaults", "gpus", "topology", "timeline"});
  NodeModel node;
  std::string profile_name;
  if (auto it = top.find("name"); it != top.end()) profile_name = string_value(it->second);
  if (auto it = top.find("description"); it != top.end()) scalar(it->second, "a string");
  if (auto it = top.find("driver_version"); it != top.end()) {
    node.driver_version = string_value(it->second);
    if (node.driver_version->size() >= NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE)
      fail(it->second, "is too long");
  }
  if (auto it = top.find("cuda_driver_version"); it != top.end()) {
    std::string text = scalar(it->second, "a CUDA version");
    size_t dot = text.find('.');
    std::optional<uint64_t> version;
    if (dot == std::string::npos) {
      version = parse_uint(text);
    } else if (auto major = parse_uint(text.substr(0, dot)),
               minor = parse_uint(text.substr(dot + 1));
               major && minor && *major < 1000 && *minor < 100) {
      version = *major * 1000 + *minor * 10;
    }
    if (!version || *version < 1000 || *version > 999000) {
      fail(it->second, str_cat(quote(text), " is not a CUDA version; write \"12.4\" or 12040"));
    }
    node.cuda_driver_version = static_cast<int>(*version);
  }
  if (auto it = top.find("nvml_version"); it != top.end()) {
    node.nvml_version = string_value(it->second);
  } else if (node.driver_version && node.cuda_driver_version) {
    node.nvml_version = str_cat(*node.cuda_driver_version / 1000, ".", *node.driver_version);
  }

  auto gpus = top.find("gpus");
  if (gpus == top.end()) fail(root, "", "missing field \"gpus\"; list the node's GPUs under gpus:");
  Fields defaults;
  if (auto it = top.find("gpu_defaults"); it != top.end())
    defaults = fields(it->second, kGpuFields);
  std::vector<Field> entries = list(gpus->second, kMaxProfileGpus, "GPUs");
  if (entries.empty()) fail(gpus->second, "is empty; list at least one GPU");
  for (size_t i = 0; i < entries.size(); ++i) {
    Fields merged = fields(entries[i], kGpuFields);
    for (const auto& [key, value] : defaults)
      merged.emplace(key, value);  // the GPU's own fields win
    if (!merged.contains("bus_id"))
      fail(entries[i], "missing field \"bus_id\"; every GPU needs its PCI bus id");
    if (!merged.contains("name"))
      fail(entries[i], "missing field \"name\"; every GPU needs a name");
    GpuModel gpu;
    read_gpu(merged, i, profile_name, gpu);
    for (size_t k = 0; k < node.gpus.size(); ++k) {
      if (node.gpus[k].pci == gpu.pci) {
        fail(merged.at("bus_id"), str_cat("bus id ", gpu.pci->bus_id(), " is also gpus[", k,
                                          "]'s; each GPU needs its own"));
      }
      if (node.gpus[k].uuid == gpu.uuid) {
        fail(entries[i],
             str_cat("uuid ", *gpu.uuid, " is also gpus[", k, "]'s; each GPU needs its own"));
      }
    }
    node.gpus.push_back(std::move(gpu));
  }

  if (auto it = top.find("topology"); it != top.end()) {
    Fields topology = fields(it->second, {"nvswitches", "matrix"});
    std::optional<unsigned> nvswitches;
    if (auto sw = topology.find("nvswitches"); sw != topology.end()) {
      nvswitches = unsigned_value(sw->second, 64, "give the number of NVSwitch chips");
    }
    auto matrix_field = topology.find("matrix");
    if (matrix_field == topology.end()) {
      fail(it->second,
           "missing field \"matrix\"; paste `nvidia-smi topo -m` output under matrix: |");
    }
    std::string text = scalar(matrix_field->second, "text");
    // The matrix is a block scalar: its first line is the one after the `matrix: |` line.
    auto parsed =
        parse_topology(text, {std::string(source_), matrix_field->second.node.Mark().line + 1});
    if (!parsed.ok()) throw SchemaError(parsed.error());
    int line = matrix_field->second.node.Mark().line + 1;
    if (auto problem = apply_topology(parsed.value(), nvswitches,
                                      str_cat(source_, ":", line, ": topology.matrix"), node)) {
      throw SchemaError(*problem);
    }
  }

  if (auto it = top.find("timeline"); it != top.end()) {
    std::vector<Field> items = list(it->second, kMaxTimelineEvents, "timeline events");
    std::vector<std::pair<TimelineEvent, size_t>> events;
    for (size_t i = 0; i < items.size(); ++i) events.emplace_back(read_event(items[i]), i);
    std::stable_sort(events.begin(), events.end(),
                     [](const auto& a, const auto& b) { return a.first.at < b.first.at; });
    for (auto& [event, index] : events) node.timeline.push_back(event);
    if (auto problem = check_timeline(node))
      fail(items[events[problem->index].second], problem->what);
  }
  return node;
}

}  // namespace

LoadResult<NodeModel> load_profile(std::string_view text, std::string_view source) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsDefined() || root.IsNull()) {
      return LoadResult<NodeModel>::failure(str_cat(source,
                                                    ": holds no YAML document; a profile is a map "
                                                    "with at least gpus: (see docs/SIMULATOR.md)"));
    }
    return ProfileReader(source).read(root);
  } catch (const SchemaError& error) {
    return LoadResult<NodeModel>::failure(error.what());
  } catch (const YAML::Exception& error) {
    std::string where =
        error.mark.is_null() ? std::string(source) : str_cat(source, ":", error.mark.line + 1);
    return LoadResult<NodeModel>::failure(
        str_cat(where, ": malformed YAML (", error.msg, "); fix the syntax"));
  }
}

}  // namespace gpunode::sim
