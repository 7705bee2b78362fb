// The node the simulator plays, as plain data: what every NVML query answers before the timeline
// changes anything, and the timeline itself. The loaders (profile YAML, nvidia-smi capture,
// topology text) fill it; the simulator copies it into its running state.
//
// Every value NVML can decline to report is optional: an empty optional is NOT_SUPPORTED. Units
// are NVML's: bytes, milliwatts, millijoules, degrees C, MHz, percent.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nvml/abi.h"
#include "pci_address.h"

namespace gpunode::sim {

constexpr uint64_t kMiB = 1ULL << 20;
constexpr unsigned kNoInstance = kNvmlNoInstanceId;

// Time on the simulated clock, counted from the first nvmlInit after configuration.
using SimTime = std::chrono::nanoseconds;

// Indexed by nvmlClockType_t: graphics, SM, memory, video.
using ClockSet = std::array<std::optional<unsigned>, 4>;

struct ProcessInfo {
  unsigned pid = 0;
  std::optional<uint64_t> used_bytes;  // empty: the driver cannot tell (Windows WDDM)
  unsigned gpu_instance_id = kNoInstance;
  unsigned compute_instance_id = kNoInstance;
};

struct MemoryInfo {
  uint64_t total_bytes = 0;
  uint64_t reserved_bytes = 0;
  uint64_t used_bytes = 0;             // excludes reserved, as nvmlMemory_v2_t reports it
  std::optional<uint64_t> free_bytes;  // a capture's own figure; else total - reserved - used
};

struct EccCounters {
  std::optional<uint64_t> corrected_volatile;
  std::optional<uint64_t> uncorrected_volatile;
  std::optional<uint64_t> corrected_aggregate;
  std::optional<uint64_t> uncorrected_aggregate;
};

// Pages retired for the two NVML causes (multiple single-bit errors, a double-bit error).
struct RetiredPages {
  std::vector<uint64_t> single_bit_addresses;
  std::vector<uint64_t> double_bit_addresses;
};

struct RemappedRows {
  unsigned corrected = 0;
  unsigned uncorrected = 0;
  bool pending = false;
  bool failure = false;
};

struct MigDevice {
  unsigned index = 0;  // slot for nvmlDeviceGetMigDeviceHandleByIndex
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  unsigned gpu_instance_slices = 0;
  unsigned compute_instance_slices = 0;
  std::string profile;  // e.g. "1g.10gb", "1c.3g.40gb": what nvmlDeviceGetName appends
  std::string uuid;     // "MIG-..."
  MemoryInfo memory;
  unsigned multiprocessors = 0;
  unsigned copy_engines = 0;
  unsigned decoders = 0;
  unsigned encoders = 0;
  unsigned jpegs = 0;
  unsigned ofas = 0;
};

struct GpuModel {
  std::optional<std::string> name;
  std::optional<std::string> uuid;
  std::optional<std::string> serial;
  std::optional<PciAddress> pci;
  std::optional<unsigned> pci_device_id;  // (device id << 16) | vendor id, as nvmlPciInfo_t
  std::optional<unsigned> pci_subsystem_id;
  std::optional<unsigned> minor_number;
  std::optional<unsigned> numa_node;
  std::optional<unsigned> architecture;  // nvmlDeviceArchitecture_t value
  std::optional<nvmlBrandType_t> brand;
  std::optional<std::pair<int, int>> compute_capability;
  std::optional<MemoryInfo> memory;
  std::optional<unsigned> temperature_c;
  std::optional<unsigned> memory_temperature_c;  // NVML_FI_DEV_MEMORY_TEMP (HBM GPUs)
  std::optional<unsigned> power_mw;
  std::optional<unsigned> power_limit_mw;
  std::optional<uint64_t> energy_mj;  // at time zero; grows with power_mw
  std::optional<unsigned> utilization_gpu;
  std::optional<unsigned> utilization_memory;
  std::optional<unsigned> utilization_encoder;
  std::optional<unsigned> utilization_decoder;
  ClockSet clocks;
  ClockSet max_clocks;
  std::optional<bool> ecc_enabled;
  std::optional<bool> ecc_pending;
  EccCounters ecc;
  std::optional<bool> persistence_mode;
  nvmlGpuVirtualizationMode_t virtualization_mode = NVML_GPU_VIRTUALIZATION_MODE_NONE;
  std::optional<bool> vgpu_licensed;  // a vGPU guest's licence; empty: no vGPU licensing
  std::optional<unsigned> pstate;     // 0..15
  std::optional<unsigned> fan_percent;
  std::optional<unsigned> pcie_replay_counter;
  std::optional<RetiredPages> retired_pages;
  std::optional<RemappedRows> remapped_rows;
  std::vector<ProcessInfo> processes;  // compute processes only
  std::optional<bool> mig_enabled;     // empty: the GPU cannot do MIG
  std::optional<bool> mig_pending;
  unsigned max_mig_devices = 0;
  std::vector<MigDevice> mig_devices;
  // NVLinks by link number; each is active and goes to the PCI address named.
  std::vector<PciAddress> nvlinks;
};

enum class TimelineKind {
  kXid,           // deliver an Xid critical error event
  kFallOffBus,    // the GPU is lost: Xid 79, then GPU_IS_LOST
  kRecover,       // a lost GPU answers again
  kProcessStart,  // a compute process appears; memory used grows
  kProcessExit,   // it goes; memory used shrinks
  kSet,           // metrics step or ramp to new values
  kEcc,           // ECC counters grow; ECC events are delivered
  kRemap,         // the row remapper's state changes (a remap recorded, a reset applied it)
};

// New values for a kSet event; empty fields keep their value. `over` > 0 ramps linearly.
struct MetricChange {
  std::optional<unsigned> utilization_gpu;
  std::optional<unsigned> utilization_memory;
  std::optional<unsigned> utilization_encoder;
  std::optional<unsigned> utilization_decoder;
  std::optional<unsigned> temperature_c;
  std::optional<unsigned> power_mw;
  std::optional<unsigned> pstate;
  ClockSet clocks;
  SimTime over{0};
};

struct TimelineEvent {
  SimTime at{0};
  TimelineKind kind = TimelineKind::kXid;
  unsigned gpu = 0;
  unsigned long long xid = 0;
  unsigned gpu_instance_id = kNoInstance;  // kXid: the instance the error names
  unsigned compute_instance_id = kNoInstance;
  ProcessInfo process;     // kProcessStart / kProcessExit (pid)
  MetricChange change;     // kSet
  uint64_t corrected = 0;  // kEcc; kRemap: rows remapped more
  uint64_t uncorrected = 0;
  std::optional<bool> remap_pending;  // kRemap; empty keeps the value
  std::optional<bool> remap_failure;
};

struct NodeModel {
  std::optional<std::string> driver_version;
  std::optional<std::string> nvml_version;
  std::optional<int> cuda_driver_version;  // 12040 for 12.4
  std::vector<GpuModel> gpus;
  // nvmlDeviceGetTopologyCommonAncestor for each ordered pair; empty when nothing says.
  std::vector<std::vector<nvmlGpuTopologyLevel_t>> pcie_levels;
  std::vector<TimelineEvent> timeline;  // sorted by `at`
};

}  // namespace gpunode::sim
