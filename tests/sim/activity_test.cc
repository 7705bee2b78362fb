// GPM, process utilization and NVLink throughput as the simulator serves them through NVML.
#include <chrono>
#include <thread>

#include "sim_library.h"

namespace gpunode::sim::testing {
namespace {

class ActivityTest : public SimTest {
 protected:
  nvmlGpmSupport_t Support(nvmlDevice_t device) {
    nvmlGpmSupport_t support{};
    support.version = NVML_GPM_SUPPORT_VERSION;
    EXPECT_EQ(api().gpm_query_device_support(device, &support), NVML_SUCCESS);
    return support;
  }

  // The metric between two samples of `device` taken `apart`.
  nvmlGpmMetric_t Between(nvmlDevice_t device, unsigned metric_id) {
    nvmlGpmSample_t first = nullptr, second = nullptr;
    EXPECT_EQ(api().gpm_sample_alloc(&first), NVML_SUCCESS);
    EXPECT_EQ(api().gpm_sample_alloc(&second), NVML_SUCCESS);
    EXPECT_EQ(api().gpm_sample_get(device, first), NVML_SUCCESS);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the window to measure
    EXPECT_EQ(api().gpm_sample_get(device, second), NVML_SUCCESS);
    nvmlGpmMetricsGet_t request{};
    request.version = NVML_GPM_METRICS_GET_VERSION;
    request.numMetrics = 1;
    request.sample1 = first;
    request.sample2 = second;
    request.metrics[0].metricId = metric_id;
    EXPECT_EQ(api().gpm_metrics_get(&request), NVML_SUCCESS);
    // Swapped samples do not make a window.
    std::swap(request.sample1, request.sample2);
    EXPECT_EQ(api().gpm_metrics_get(&request), NVML_ERROR_INVALID_ARGUMENT);
    std::swap(request.sample1, request.sample2);
    request.version = 2;
    EXPECT_EQ(api().gpm_metrics_get(&request), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    EXPECT_EQ(api().gpm_sample_free(first), NVML_SUCCESS);
    EXPECT_EQ(api().gpm_sample_free(second), NVML_SUCCESS);
    return request.metrics[0];
  }
};

TEST_F(ActivityTest, GpmOnHopperOnly) {
  start("dgx1-v100");
  EXPECT_EQ(Support(gpu(0)).isSupportedDevice, 0u);
  nvmlGpmSample_t sample = nullptr;
  ASSERT_EQ(api().gpm_sample_alloc(&sample), NVML_SUCCESS);
  EXPECT_EQ(api().gpm_sample_get(gpu(0), sample), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api().gpm_sample_free(sample), NVML_SUCCESS);
  ASSERT_EQ(api().shutdown(), NVML_SUCCESS);

  start("dgx-h100");
  EXPECT_EQ(Support(gpu(0)).isSupportedDevice, 1u);
  nvmlGpmSupport_t old{};
  old.version = 0;
  EXPECT_EQ(api().gpm_query_device_support(gpu(0), &old), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
}

TEST_F(ActivityTest, GpmMetricsFollowUtilization) {
  start("dgx-h100");  // GPU7 is 35% busy, memory 12%; 18 NVLinks per GPU
  nvmlGpmMetric_t busy = Between(gpu(7), NVML_GPM_METRIC_GRAPHICS_UTIL);
  EXPECT_EQ(busy.nvmlReturn, NVML_SUCCESS);
  EXPECT_DOUBLE_EQ(busy.value, 35);
  EXPECT_DOUBLE_EQ(Between(gpu(7), NVML_GPM_METRIC_DRAM_BW_UTIL).value, 12);
  EXPECT_DOUBLE_EQ(Between(gpu(7), NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC).value,
                   0.35 * 18 * 20480);
  EXPECT_DOUBLE_EQ(Between(gpu(0), NVML_GPM_METRIC_ANY_TENSOR_UTIL).value, 0);
  EXPECT_EQ(Between(gpu(7), 4 /* integer pipe: not served */).nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(ActivityTest, ProcessUtilizationSharesTheGpu) {
  start("dgx-h100");
  unsigned count = 0;
  EXPECT_EQ(api().device_get_process_utilization(gpu(7), nullptr, &count, 0),
            NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(count, 1u);
  nvmlProcessUtilizationSample_t sample{};
  ASSERT_EQ(api().device_get_process_utilization(gpu(7), &sample, &count, 0), NVML_SUCCESS);
  EXPECT_EQ(sample.pid, 48211u);
  EXPECT_EQ(sample.smUtil, 35u);
  EXPECT_EQ(sample.memUtil, 12u);
  // Nothing newer than the newest sample seen.
  EXPECT_EQ(api().device_get_process_utilization(gpu(7), &sample, &count, ~0ULL),
            NVML_ERROR_NOT_FOUND);
  // An idle GPU without processes has no samples.
  EXPECT_EQ(api().device_get_process_utilization(gpu(0), &sample, &count, 0), NVML_ERROR_NOT_FOUND);
}

TEST_F(ActivityTest, ProcessesUtilizationInfoIsVersionedAndOnlyOnDriver550) {
  start("dgx-h100");  // driver 550
  nvmlProcessesUtilizationInfo_t info{};
  info.version = kNvmlProcessesUtilizationInfoV1Version;
  EXPECT_EQ(api().device_get_processes_utilization_info(gpu(7), &info),
            NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(info.processSamplesCount, 1u);
  nvmlProcessUtilizationInfo_v1_t sample{};
  info.procUtilArray = &sample;
  ASSERT_EQ(api().device_get_processes_utilization_info(gpu(7), &info), NVML_SUCCESS);
  EXPECT_EQ(sample.pid, 48211u);
  EXPECT_EQ(sample.smUtil, 35u);
  EXPECT_EQ(sample.memUtil, 12u);
  EXPECT_GT(sample.timeStamp, 0u);
  info.lastSeenTimeStamp = ~0ULL;
  EXPECT_EQ(api().device_get_processes_utilization_info(gpu(7), &info), NVML_ERROR_NOT_FOUND);
  info.version = 0x01000010;  // a size this struct never had
  EXPECT_EQ(api().device_get_processes_utilization_info(gpu(7), &info),
            NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  EXPECT_EQ(api().device_get_processes_utilization_info(gpu(7), nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(api().shutdown(), NVML_SUCCESS);

  // Driver 535 does not have the call: what a caller of that library sees for a missing symbol.
  start("dgx1-v100");
  info = {};
  info.version = kNvmlProcessesUtilizationInfoV1Version;
  EXPECT_EQ(api().device_get_processes_utilization_info(gpu(0), &info),
            NVML_ERROR_FUNCTION_NOT_FOUND);
  unsigned count = 0;
  EXPECT_EQ(api().device_get_process_utilization(gpu(0), nullptr, &count, 0),
            NVML_ERROR_INSUFFICIENT_SIZE);
}

TEST_F(ActivityTest, NvLinkThroughputFieldsPerLink) {
  start("dgx-h100");
  nvmlFieldValue_t fields[3] = {};
  fields[0].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
  fields[0].scopeId = 0;
  fields[1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
  fields[1].scopeId = 17;
  fields[2].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
  fields[2].scopeId = 18;  // past the last link
  ASSERT_EQ(api().device_get_field_values(gpu(7), 3, fields), NVML_SUCCESS);
  EXPECT_EQ(fields[0].nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(fields[0].valueType, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
  EXPECT_EQ(fields[1].nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(fields[2].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  unsigned long long before = fields[0].value.ullVal;
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(api().device_get_field_values(gpu(7), 1, fields), NVML_SUCCESS);
  EXPECT_GT(fields[0].value.ullVal, before);
}

}  // namespace
}  // namespace gpunode::sim::testing
