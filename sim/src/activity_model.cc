#include "activity_model.h"

#include <cmath>

#include "nvml/abi.h"

namespace gpunode::sim {
namespace {

constexpr unsigned kHopper = 9;
constexpr unsigned kArchitectureUnknown = 0xFFFFFFFFu;

// How busy each pipe is relative to the GPU's utilization: a mixed-precision training job,
// mostly tensor work, some FP32, little FP64.
constexpr double kSmActiveShare = 0.9;
constexpr double kSmOccupancyShare = 0.45;
constexpr double kTensorShare = 0.6;
constexpr double kFp64Share = 0.05;
constexpr double kFp32Share = 0.25;
constexpr double kFp16Share = 0.1;
// PCIe traffic at full load, MiB/s (host to device more than back).
constexpr double kPcieTxAtFullLoad = 2048;
constexpr double kPcieRxAtFullLoad = 4096;

}  // namespace

bool gpm_supported(std::optional<unsigned> architecture) {
  return architecture && *architecture >= kHopper && *architecture != kArchitectureUnknown;
}

std::optional<double> gpm_metric(unsigned metric_id, const ActivitySnapshot& earlier,
                                 const ActivitySnapshot& later) {
  double busy = (earlier.utilization_gpu + later.utilization_gpu) / 2;  // percent
  double memory = (earlier.utilization_memory + later.utilization_memory) / 2;
  double load = busy / 100;
  switch (metric_id) {
    case NVML_GPM_METRIC_GRAPHICS_UTIL:
      return busy;
    case NVML_GPM_METRIC_SM_UTIL:
      return busy * kSmActiveShare;
    case NVML_GPM_METRIC_SM_OCCUPANCY:
      return busy * kSmOccupancyShare;
    case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
      return busy * kTensorShare;
    case NVML_GPM_METRIC_DRAM_BW_UTIL:
      return memory;
    case NVML_GPM_METRIC_FP64_UTIL:
      return busy * kFp64Share;
    case NVML_GPM_METRIC_FP32_UTIL:
      return busy * kFp32Share;
    case NVML_GPM_METRIC_FP16_UTIL:
      return busy * kFp16Share;
    case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
      return load * kPcieTxAtFullLoad;
    case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
      return load * kPcieRxAtFullLoad;
    case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC:
    case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
      if (later.nvlinks == 0) return std::nullopt;
      return load * kNvlinkMibPerSecAtFullLoad * later.nvlinks;
    default:
      return std::nullopt;
  }
}

std::vector<ProcessShare> process_shares(const std::vector<ProcessInfo>& processes,
                                         unsigned utilization_gpu, unsigned utilization_memory) {
  std::vector<ProcessShare> out;
  if (processes.empty()) return out;
  auto n = static_cast<unsigned>(processes.size());
  for (const ProcessInfo& process : processes)
    out.push_back(ProcessShare{process.pid, utilization_gpu / n, utilization_memory / n});
  return out;
}

double UtilizationIntegral::advance(SimTime now, unsigned utilization_pct) {
  if (!started_ || now < last_) {
    started_ = true;
    total_ = 0;
    // The counter starts at time zero, with the utilization it has now.
    last_ = SimTime{0};
    last_pct_ = utilization_pct;
  }
  double seconds = std::chrono::duration<double>(now - last_).count();
  total_ += (last_pct_ + utilization_pct) / 2 * seconds;
  last_ = now;
  last_pct_ = utilization_pct;
  return total_;
}

uint64_t nvlink_kib(double percent_seconds) {
  return static_cast<uint64_t>(
      std::llround(percent_seconds / 100 * kNvlinkMibPerSecAtFullLoad * 1024));
}

}  // namespace gpunode::sim
