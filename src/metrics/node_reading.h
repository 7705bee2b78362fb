// One sample of the node, everything the exposition is rendered from: per-GPU and per-MIG-device
// values by dcgm-exporter field, who holds each device, every GPU process with its owner, XIDs and
// the exporter's own counters. Rendering it needs no NVML, kubelet or /proc.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/attribution.h"
#include "metrics/exposition.h"

namespace gpunode::metrics {

// The dcgm-exporter fields gpunode reads from NVML, in exposition order.
enum Field : uint8_t {
  kSmClock,
  kMemClock,
  kMemoryTemp,
  kGpuTemp,
  kPowerUsage,
  kTotalEnergyConsumption,
  kPcieReplayCounter,
  kGpuUtil,
  kMemCopyUtil,
  kEncUtil,
  kDecUtil,
  kFbFree,
  kFbUsed,
  kFbTotal,
  kFbReserved,
  kEccSbeVolTotal,
  kEccDbeVolTotal,
  kEccSbeAggTotal,
  kEccDbeAggTotal,
  kRetiredSbe,
  kRetiredDbe,
  kCorrectableRemappedRows,
  kUncorrectableRemappedRows,
  kRowRemapFailure,
  kRowRemapPending,
  kNvlinkBandwidthTotal,
  kVgpuLicenseStatus,
  // Profiling metrics, from GPM (Hopper and later).
  kProfGrEngineActive,
  kProfSmActive,
  kProfSmOccupancy,
  kProfPipeTensorActive,
  kProfDramActive,
  kProfPipeFp64Active,
  kProfPipeFp32Active,
  kProfPipeFp16Active,
  kProfPcieTxBytes,
  kProfPcieRxBytes,
  kProfNvlinkTxBytes,
  kProfNvlinkRxBytes,
  kFieldCount,
};

struct FieldSpec {
  std::string_view name;  // the dcgm-exporter metric name
  MetricType type;
  std::string_view help;
  bool fractional;  // rendered with six decimals like dcgm-exporter's doubles
};

const std::array<FieldSpec, kFieldCount>& FieldSpecs();

using FieldValues = std::array<std::optional<double>, kFieldCount>;

// Pod labels of one series; `vgpu` tells apart the pods that share one GPU.
struct PodLabels {
  std::string namespace_name;
  std::string pod;
  std::string container;
  std::string vgpu;
  // dcgm-exporter's labels of a device held through a ResourceClaim (--kubernetes-enable-dra):
  // dra_claim_name, dra_claim_namespace, dra_device_name, dra_driver_name, then for a MIG device
  // dra_mig_device_uuid and dra_mig_profile, then dra_pool_name; in that (sorted) order.
  std::vector<std::pair<std::string, std::string>> dra = {};
};

struct ProcessReading {
  unsigned pid = 0;
  std::optional<uint64_t> used_memory_bytes;
  // SM utilization over the last interval, percent (nvmlDeviceGetProcessUtilization); empty
  // where the driver does not report it.
  std::optional<double> sm_utilization_pct;
  Ownership ownership = Ownership::kUnknown;
  std::optional<PodLabels> pod;  // for kPod
  std::string orphan_reason;     // for kOrphan
  std::string pod_uid;           // from /proc/PID/cgroup, shown on orphans
  std::string container_id;
};

// What one pod's processes use of a shared device.
struct HolderUsage {
  std::optional<double> gpu_util_pct;  // sum of its processes' SM utilization, at most 100
  std::optional<double> fb_used_mib;   // sum of its processes' memory
};

// A full GPU or a MIG device.
struct DeviceReading {
  FieldValues values;
  // One entry per pod the kubelet allocated the device to (several for a shared GPU).
  std::vector<PodLabels> holders;
  // Time-sliced or MPS: the holders are replicas of one device. Then DCGM_FI_DEV_GPU_UTIL and
  // DCGM_FI_DEV_FB_USED are reported per holder from its processes (holder_usage, parallel to
  // holders) and for the whole device without pod labels.
  bool shared = false;
  std::vector<HolderUsage> holder_usage;
  std::vector<ProcessReading> processes;
};

struct MigReading : DeviceReading {
  std::string uuid;
  std::string profile;  // "1g.10gb"
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
};

struct GpuReading : DeviceReading {
  unsigned index = 0;
  bool lost = false;  // fell off the bus, or NVML cannot reach it: only the health series
  std::string uuid;
  std::string name;
  std::string pci_bus_id;
  bool mig_enabled = false;
  std::vector<MigReading> migs;
  // DCGM_FI_DEV_XID_ERRORS: the last XID (0 before any); empty when XIDs cannot be watched.
  std::optional<uint64_t> last_xid;
  std::map<uint64_t, uint64_t> xid_counts;  // XID -> events since the exporter started
  // Zombie processes on this GPU and its MIG devices; empty when attribution is unavailable.
  std::optional<unsigned> orphan_processes;
};

struct ExporterStats {
  double sample_duration_seconds = 0;
  double last_sample_timestamp_seconds = 0;
  uint64_t samples_total = 0;
  uint64_t nvml_errors_total = 0;
  uint64_t pod_resources_errors_total = 0;
  std::optional<bool> pod_resources_up;  // empty when attribution is off
};

struct NodeReading {
  std::string hostname;
  std::string driver_version;  // empty when the driver does not say
  std::vector<GpuReading> gpus;
  // The NVIDIA GPUs the machine has: the driver's count (lost GPUs included) or the NVIDIA
  // controllers on the PCI bus, whichever is larger, so a card the driver did not take counts.
  unsigned physical_gpus = 0;
  ExporterStats stats;
};

}  // namespace gpunode::metrics
