#include "nvml/gpm.h"

#include <utility>

#include "core/status_macros.h"
#include "nvml/library.h"

namespace gpunode::nvml {
namespace {

// NVML's id of each GpmMetric, in enum order.
constexpr std::array<nvmlGpmMetricId_t, kGpmMetricCount> kMetricIds = {
    NVML_GPM_METRIC_GRAPHICS_UTIL,
    NVML_GPM_METRIC_SM_UTIL,
    NVML_GPM_METRIC_SM_OCCUPANCY,
    NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    NVML_GPM_METRIC_DRAM_BW_UTIL,
    NVML_GPM_METRIC_FP64_UTIL,
    NVML_GPM_METRIC_FP32_UTIL,
    NVML_GPM_METRIC_FP16_UTIL,
    NVML_GPM_METRIC_PCIE_TX_PER_SEC,
    NVML_GPM_METRIC_PCIE_RX_PER_SEC,
    NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
    NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
};
static_assert(static_cast<size_t>(GpmMetric::kNvlinkRxMibPerSec) + 1 == kGpmMetricCount);

}  // namespace

absl::StatusOr<bool> GpmSupported(const Library& library, const Device& gpu) {
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(library, gpm_query_device_support, gpu.handle(), &support));
  return support.isSupportedDevice != 0;
}

absl::StatusOr<GpmSample> GpmSample::Allocate(const Library& library) {
  nvmlGpmSample_t handle = nullptr;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(library, gpm_sample_alloc, &handle));
  return GpmSample(&library, handle);
}

GpmSample::GpmSample(GpmSample&& other) noexcept
    : library_(other.library_), handle_(std::exchange(other.handle_, nullptr)) {}

GpmSample& GpmSample::operator=(GpmSample&& other) noexcept {
  std::swap(library_, other.library_);
  std::swap(handle_, other.handle_);
  return *this;
}

GpmSample::~GpmSample() {
  if (handle_ != nullptr && library_->entry_points().gpm_sample_free != nullptr)
    library_->entry_points().gpm_sample_free(handle_);
}

absl::Status GpmSample::Take(const Device& gpu) {
  return GPUNODE_NVML_CALL(*library_, gpm_sample_get, gpu.handle(), handle_);
}

absl::Status GpmSample::TakeMig(const Device& parent, unsigned gpu_instance_id) {
  return GPUNODE_NVML_CALL(*library_, gpm_mig_sample_get, parent.handle(), gpu_instance_id,
                           handle_);
}

absl::StatusOr<GpmValues> GpmMetrics(const Library& library, const GpmSample& earlier,
                                     const GpmSample& later) {
  // About 4 KiB; kept off the sampling thread's stack between calls.
  thread_local nvmlGpmMetricsGet_t request;
  request = {};
  request.version = NVML_GPM_METRICS_GET_VERSION;
  request.numMetrics = kGpmMetricCount;
  request.sample1 = earlier.handle();
  request.sample2 = later.handle();
  for (size_t i = 0; i < kGpmMetricCount; ++i) request.metrics[i].metricId = kMetricIds[i];
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(library, gpm_metrics_get, &request));
  GpmValues values;
  for (size_t i = 0; i < kGpmMetricCount; ++i) {
    if (request.metrics[i].nvmlReturn == NVML_SUCCESS) values[i] = request.metrics[i].value;
  }
  return values;
}

}  // namespace gpunode::nvml
