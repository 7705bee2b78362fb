// A stand-in for an old driver's libnvidia-ml.so.1 that exports only the unversioned names of a
// handful of entry points, to test symbol fallback and missing-symbol handling in the loader and
// the typed calls that turn to an older entry point when a newer one is missing.
#include "nvml/abi.h"

namespace {
int init_count = 0;
nvmlDevice_t const kOnlyDevice = reinterpret_cast<nvmlDevice_t>(0x1000);
}  // namespace

extern "C" {
__attribute__((visibility("default"))) nvmlReturn_t nvmlInit() {
  ++init_count;
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown() {
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --init_count;
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  *count = 1;
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex(
    unsigned int index, nvmlDevice_t* device) {
  if (index != 0) return NVML_ERROR_INVALID_ARGUMENT;
  *device = kOnlyDevice;
  return NVML_SUCCESS;
}
// One process, 42% busy; the driver has no nvmlDeviceGetProcessesUtilizationInfo.
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization, unsigned int* count,
    unsigned long long last_seen) {
  if (device != kOnlyDevice || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (last_seen >= 1000) return NVML_ERROR_NOT_FOUND;
  if (utilization == nullptr || *count < 1) {
    *count = 1;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *utilization = {4242, 1000, 42, 7, 3, 2};
  *count = 1;
  return NVML_SUCCESS;
}
}
