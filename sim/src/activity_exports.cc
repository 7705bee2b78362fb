// The simulator's NVML entry points for activity: GPU Performance Monitoring (GPM) samples and
// metrics, and per-process utilization, with the semantics of libnvidia-ml.so.1.
//
// Including nvml/abi.h under default visibility checks every definition here against the ABI
// declaration and exports exactly these functions.
#include <chrono>
#include <cstdlib>
#include <new>

#pragma GCC visibility push(default)
#include "nvml/abi.h"
#pragma GCC visibility pop

#include "activity_model.h"
#include "device_call.h"
#include "simulator.h"

using gpunode::sim::ActivitySnapshot;
using gpunode::sim::GpuState;
using gpunode::sim::Metric;
using gpunode::sim::MigDevice;
using gpunode::sim::NodeState;
using gpunode::sim::ProcessShare;
using gpunode::sim::Simulator;
using gpunode::sim::with_device;

// A GPM sample buffer: empty until nvmlGpmSampleGet or nvmlGpmMigSampleGet fills it.
struct nvmlGpmSample_st {
  bool filled = false;
  ActivitySnapshot snapshot;
};

namespace {

ActivitySnapshot snapshot_of(NodeState& node, GpuState& gpu, unsigned index) {
  ActivitySnapshot s;
  s.at = node.now(NodeState::Clock::now());
  s.gpu = index;
  s.utilization_gpu = gpu.metric(Metric::kUtilizationGpu, s.at).value_or(0);
  s.utilization_memory = gpu.metric(Metric::kUtilizationMemory, s.at).value_or(0);
  s.nvlinks = static_cast<unsigned>(gpu.model().nvlinks.size());
  return s;
}

// The driver's major version (550 for "550.90.07"); 0 when the node does not say.
unsigned driver_major(const NodeState& node) {
  const std::optional<std::string>& version = node.model().driver_version;
  return version ? static_cast<unsigned>(std::strtoul(version->c_str(), nullptr, 10)) : 0;
}

// Per-process utilization as both NVML calls see it: one sample per process of a full GPU, taken
// now (CPU time in microseconds, as the driver stamps them), NOT_FOUND when there is none newer
// than `last_seen`. `fill(shares, stamp)` writes the call's own answer. A call the node's driver
// is older than is FUNCTION_NOT_FOUND, what a caller of the real library gets from a missing
// symbol.
template <typename Fill>
nvmlReturn_t process_samples(nvmlDevice_t device, unsigned long long last_seen,
                             unsigned needs_driver_major, Fill&& fill) {
  return with_device(
      device, [&](NodeState& node, GpuState& gpu, unsigned, const MigDevice* mig) -> nvmlReturn_t {
        unsigned major = driver_major(node);
        if (major != 0 && major < needs_driver_major) return NVML_ERROR_FUNCTION_NOT_FOUND;
        if (mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
        auto now = node.now(NodeState::Clock::now());
        std::optional<unsigned> busy = gpu.metric(Metric::kUtilizationGpu, now);
        std::optional<unsigned> memory = gpu.metric(Metric::kUtilizationMemory, now);
        if (!busy || !memory) return NVML_ERROR_NOT_SUPPORTED;
        auto stamp =
            static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count());
        std::vector<ProcessShare> shares =
            gpunode::sim::process_shares(gpu.model().processes, *busy, *memory);
        if (shares.empty() || stamp <= last_seen) return NVML_ERROR_NOT_FOUND;
        return fill(shares, stamp);
      });
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* gpmSupport) {
  return with_device(
      device, [&](NodeState&, GpuState& gpu, unsigned, const MigDevice* mig) -> nvmlReturn_t {
        if (gpmSupport == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
          return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        if (mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;  // asked of the physical GPU
        gpmSupport->isSupportedDevice =
            gpunode::sim::gpm_supported(gpu.model().architecture) ? 1 : 0;
        return NVML_SUCCESS;
      });
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample) {
  if (gpmSample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *gpmSample = new (std::nothrow) nvmlGpmSample_st;
  return *gpmSample == nullptr ? NVML_ERROR_MEMORY : NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
  if (gpmSample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  delete gpmSample;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
  return with_device(
      device,
      [&](NodeState& node, GpuState& gpu, unsigned index, const MigDevice* mig) -> nvmlReturn_t {
        if (gpmSample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        // MIG devices are sampled through their parent with nvmlGpmMigSampleGet.
        if (mig != nullptr || !gpunode::sim::gpm_supported(gpu.model().architecture))
          return NVML_ERROR_NOT_SUPPORTED;
        gpmSample->snapshot = snapshot_of(node, gpu, index);
        gpmSample->filled = true;
        return NVML_SUCCESS;
      });
}

nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId,
                                 nvmlGpmSample_t gpmSample) {
  return with_device(
      device,
      [&](NodeState& node, GpuState& gpu, unsigned index, const MigDevice* mig) -> nvmlReturn_t {
        if (gpmSample == nullptr || mig != nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        if (!gpunode::sim::gpm_supported(gpu.model().architecture)) return NVML_ERROR_NOT_SUPPORTED;
        if (!gpu.model().mig_enabled.value_or(false)) return NVML_ERROR_NOT_SUPPORTED;
        bool found = false;
        for (const MigDevice& m : gpu.model().mig_devices)
          found = found || m.gpu_instance_id == gpuInstanceId;
        if (!found) return NVML_ERROR_NOT_FOUND;
        // A MIG instance shows its GPU's activity (the profile has no utilization per instance).
        gpmSample->snapshot = snapshot_of(node, gpu, index);
        gpmSample->snapshot.gpu_instance_id = gpuInstanceId;
        gpmSample->filled = true;
        return NVML_SUCCESS;
      });
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metricsGet) {
  if (metricsGet == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION)
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const nvmlGpmSample_st* first = metricsGet->sample1;
  const nvmlGpmSample_st* second = metricsGet->sample2;
  if (metricsGet->numMetrics > NVML_GPM_METRIC_MAX || first == nullptr || second == nullptr ||
      !first->filled || !second->filled)
    return NVML_ERROR_INVALID_ARGUMENT;
  const ActivitySnapshot& a = first->snapshot;
  const ActivitySnapshot& b = second->snapshot;
  // Two samples of one device, the first taken earlier.
  if (a.gpu != b.gpu || a.gpu_instance_id != b.gpu_instance_id || b.at <= a.at)
    return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < metricsGet->numMetrics; ++i) {
    nvmlGpmMetric_t& metric = metricsGet->metrics[i];
    metric.metricInfo = {};
    std::optional<double> value = gpunode::sim::gpm_metric(metric.metricId, a, b);
    metric.nvmlReturn = value ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
    metric.value = value.value_or(0);
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t* utilization,
                                             unsigned int* processSamplesCount,
                                             unsigned long long lastSeenTimeStamp) {
  if (processSamplesCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return process_samples(device, lastSeenTimeStamp, /*needs_driver_major=*/0,
                         [&](const std::vector<ProcessShare>& shares, unsigned long long stamp) {
                           auto needed = static_cast<unsigned>(shares.size());
                           if (utilization == nullptr || *processSamplesCount < needed) {
                             *processSamplesCount = needed;
                             return NVML_ERROR_INSUFFICIENT_SIZE;
                           }
                           for (unsigned i = 0; i < needed; ++i) {
                             utilization[i] = {shares[i].pid,        stamp, shares[i].sm_pct,
                                               shares[i].memory_pct, 0,     0};
                           }
                           *processSamplesCount = needed;
                           return NVML_SUCCESS;
                         });
}

nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device,
                                                   nvmlProcessesUtilizationInfo_t* info) {
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (info->version != kNvmlProcessesUtilizationInfoV1Version)
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  return process_samples(
      device, info->lastSeenTimeStamp, /*needs_driver_major=*/550,
      [&](const std::vector<ProcessShare>& shares, unsigned long long stamp) {
        auto needed = static_cast<unsigned>(shares.size());
        if (info->procUtilArray == nullptr || info->processSamplesCount < needed) {
          info->processSamplesCount = needed;
          return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        for (unsigned i = 0; i < needed; ++i) {
          info->procUtilArray[i] = {
              stamp, shares[i].pid, shares[i].sm_pct, shares[i].memory_pct, 0, 0, 0, 0};
        }
        info->processSamplesCount = needed;
        return NVML_SUCCESS;
      });
}

}  // extern "C"
