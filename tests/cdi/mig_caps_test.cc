// MIG capability nodes: from the driver's capability files, else from mig-minors.
#include "cdi/mig_caps.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "temp_dir.h"

namespace gpunode::cdi {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST(MigCapsTest, TheDriversCapabilityFilesComeFirst) {
  testing::TempDir root("gpunode-migcaps");
  // The driver's format: /proc/driver/nvidia/capabilities/gpu1/mig/gi2/access.
  Write(root.path() + "/proc/driver/nvidia/capabilities/gpu1/mig/gi2/access",
        "DeviceFileMinor: 21\nDeviceFileMode: 292\nDeviceFileModify: 1\n");
  Write(root.path() + "/proc/driver/nvidia/capabilities/gpu1/mig/gi2/ci0/access",
        "DeviceFileMinor: 22\nDeviceFileMode: 292\nDeviceFileModify: 1\n");
  Write(root.path() + "/proc/driver/nvidia-caps/mig-minors",
        "gpu1/gi2/access 99\ngpu1/gi2/ci0/access 98\ngpu1/gi3/access 30\ngpu1/gi3/ci1/access 32\n");
  core::HostRoot host(root.path());
  EXPECT_THAT(MigCapabilityNodes(host, 1, 2, 0),
              ElementsAre("/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22"));
  EXPECT_THAT(MigCapabilityNodes(host, 1, 3, 1),
              ElementsAre("/dev/nvidia-caps/nvidia-cap30", "/dev/nvidia-caps/nvidia-cap32"));
  EXPECT_THAT(MigCapabilityNodes(host, 0, 3, 1), IsEmpty());
}

}  // namespace
}  // namespace gpunode::cdi
