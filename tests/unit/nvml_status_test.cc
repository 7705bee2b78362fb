#include "gtest/gtest.h"
#include "nvml/status.h"

namespace gpunode::nvml {
namespace {

TEST(NvmlStatus, SuccessIsOk) { EXPECT_TRUE(FromReturn(NVML_SUCCESS, "nvmlInit_v2", "").ok()); }

TEST(NvmlStatus, MessageNamesCallErrorAndDescription) {
  absl::Status st =
      FromReturn(NVML_ERROR_NOT_SUPPORTED, "nvmlDeviceGetPowerUsage", "Not Supported");
  EXPECT_EQ(st.message(), "nvmlDeviceGetPowerUsage: NVML_ERROR_NOT_SUPPORTED (Not Supported)");
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(IsNotSupported(st));
  EXPECT_FALSE(IsGpuLost(st));
  EXPECT_EQ(ReturnOf(st), NVML_ERROR_NOT_SUPPORTED);
}

TEST(NvmlStatus, GpuLostIsUnavailable) {
  absl::Status st = FromReturn(NVML_ERROR_GPU_IS_LOST, "nvmlDeviceGetUUID", "GPU is lost");
  EXPECT_TRUE(IsGpuLost(st));
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable);
}

TEST(NvmlStatus, MissingSymbolCountsAsNotSupported) {
  EXPECT_TRUE(
      IsNotSupported(FromReturn(NVML_ERROR_FUNCTION_NOT_FOUND, "nvmlDeviceGetNumaNodeId", "")));
}

TEST(NvmlStatus, EveryKnownCodeHasItsName) {
  EXPECT_EQ(ReturnName(NVML_ERROR_UNINITIALIZED), "NVML_ERROR_UNINITIALIZED");
  EXPECT_EQ(ReturnName(NVML_ERROR_INSUFFICIENT_SIZE), "NVML_ERROR_INSUFFICIENT_SIZE");
  EXPECT_EQ(ReturnName(NVML_ERROR_RESET_TYPE_NOT_SUPPORTED), "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED");
  EXPECT_EQ(ReturnName(NVML_ERROR_UNKNOWN), "NVML_ERROR_UNKNOWN");
  for (nvmlReturn_t code = 0; code <= NVML_ERROR_RESET_TYPE_NOT_SUPPORTED; ++code) {
    EXPECT_NE(ReturnName(code), "NVML_ERROR_OTHER") << code;
  }
}

TEST(NvmlStatus, UnknownCodeKeepsTheNumber) {
  absl::Status st = FromReturn(1234, "nvmlFoo", "");
  EXPECT_EQ(st.message(), "nvmlFoo: NVML error 1234");
  EXPECT_EQ(ReturnOf(st), 1234);
}

TEST(NvmlStatus, NonNvmlStatusHasNoCode) {
  EXPECT_EQ(ReturnOf(absl::InternalError("x")), NVML_SUCCESS);
}

}  // namespace
}  // namespace gpunode::nvml
