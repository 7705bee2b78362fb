// Per-process utilization through the typed NVML layer: the newer call where the driver has it,
// the older one where it does not, and the same answer either way.
#include "build_paths.h"
#include "gtest/gtest.h"
#include "nvml/activity.h"
#include "nvml/status.h"
#include "nvml/system.h"
#include "sim_library.h"

namespace gpunode::nvml {
namespace {

std::vector<ProcessUtilization> Samples(const Library& library, unsigned index,
                                        uint64_t since_us = 0) {
  absl::StatusOr<Device> device = DeviceAt(library, index);
  EXPECT_TRUE(device.ok()) << device.status();
  if (!device.ok()) return {};
  absl::StatusOr<std::vector<ProcessUtilization>> samples =
      ProcessUtilizations(library, *device, since_us);
  EXPECT_TRUE(samples.ok()) << samples.status();
  return samples.value_or(std::vector<ProcessUtilization>{});
}

// Driver 550: nvmlDeviceGetProcessesUtilizationInfo answers, and only it reports the JPEG and
// optical-flow engines.
TEST(ProcessUtilizations, ADriverThatHasTheNewerCallAnswersThroughIt) {
  std::unique_ptr<Library> library = testing::OpenSimulator("dgx-h100");
  ASSERT_NE(library, nullptr);
  std::vector<ProcessUtilization> samples = Samples(*library, 7);  // 35% busy, memory 12%
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].pid, 48211u);
  EXPECT_EQ(samples[0].sm_pct, 35u);
  EXPECT_EQ(samples[0].memory_pct, 12u);
  EXPECT_EQ(samples[0].jpeg_pct, 0u);
  EXPECT_EQ(samples[0].optical_flow_pct, 0u);
  // Nothing newer than the newest sample: an empty list, not an error.
  EXPECT_TRUE(Samples(*library, 7, samples[0].timestamp_us + 60'000'000).empty());
  // An idle GPU without processes.
  EXPECT_TRUE(Samples(*library, 0).empty());
}

// Driver 535 has no nvmlDeviceGetProcessesUtilizationInfo: the older call gives the same figures.
TEST(ProcessUtilizations, ADriverBefore550AnswersThroughTheOlderCall) {
  std::unique_ptr<Library> library = testing::OpenSimulator("dgx1-v100");
  ASSERT_NE(library, nullptr);
  std::vector<ProcessUtilization> samples = Samples(*library, 0);  // 97% busy, memory 61%
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].pid, 10453u);
  EXPECT_EQ(samples[0].sm_pct, 97u);
  EXPECT_EQ(samples[0].memory_pct, 61u);
  EXPECT_FALSE(samples[0].jpeg_pct.has_value());
  EXPECT_FALSE(samples[0].optical_flow_pct.has_value());
}

// A library that does not export the newer symbol at all, as drivers before 550 ship.
TEST(ProcessUtilizations, AMissingNewerSymbolFallsBackToTheOlderCall) {
  absl::StatusOr<std::unique_ptr<Library>> library =
      Library::Open({.library_path = build_paths::kOldDriverLibrary});
  ASSERT_TRUE(library.ok()) << library.status();
  EXPECT_EQ((*library)->entry_points().device_get_processes_utilization_info, nullptr);
  std::vector<ProcessUtilization> samples = Samples(**library, 0);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].pid, 4242u);
  EXPECT_EQ(samples[0].timestamp_us, 1000u);
  EXPECT_EQ(samples[0].sm_pct, 42u);
  EXPECT_EQ(samples[0].encoder_pct, 3u);
  EXPECT_FALSE(samples[0].jpeg_pct.has_value());
  EXPECT_TRUE(Samples(**library, 0, 1000).empty());
}

}  // namespace
}  // namespace gpunode::nvml
