#include "nvlink_throughput.h"

namespace gpunode::sim {

std::optional<uint64_t> nvlink_throughput_kib(GpuState& gpu, SimTime now,
                                              const nvmlFieldValue_t& field) {
  if (field.fieldId != NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX &&
      field.fieldId != NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX)
    return std::nullopt;
  if (field.scopeId >= gpu.model().nvlinks.size()) return std::nullopt;
  unsigned busy = gpu.metric(Metric::kUtilizationGpu, now).value_or(0);
  // Every link carries the same share, both ways.
  return nvlink_kib(gpu.activity().advance(now, busy));
}

}  // namespace gpunode::sim
