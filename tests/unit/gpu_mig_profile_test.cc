#include "gpu/mig_profile.h"
#include "gtest/gtest.h"

namespace gpunode::gpu {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

nvmlDeviceAttributes_t Attributes(unsigned gi_slices, unsigned ci_slices,
                                  unsigned long long memory_mb) {
  nvmlDeviceAttributes_t a{};
  a.gpuInstanceSliceCount = gi_slices;
  a.computeInstanceSliceCount = ci_slices;
  a.memorySizeMB = memory_mb;
  return a;
}

TEST(MigProfileName, A100_80GB) {
  EXPECT_EQ(MigProfileName(Attributes(1, 1, 9856), 81920 * kMiB), "1g.10gb");
  EXPECT_EQ(MigProfileName(Attributes(2, 2, 19968), 81920 * kMiB), "2g.20gb");
  EXPECT_EQ(MigProfileName(Attributes(3, 3, 40192), 81920 * kMiB), "3g.40gb");
  EXPECT_EQ(MigProfileName(Attributes(7, 7, 80384), 81920 * kMiB), "7g.80gb");
}

TEST(MigProfileName, A100_40GB) {
  EXPECT_EQ(MigProfileName(Attributes(3, 3, 19968), 40536 * kMiB), "3g.20gb");
  EXPECT_EQ(MigProfileName(Attributes(1, 1, 4864), 40536 * kMiB), "1g.5gb");
}

TEST(MigProfileName, ComputeInstanceSmallerThanGpuInstance) {
  EXPECT_EQ(MigProfileName(Attributes(3, 1, 19968), 40536 * kMiB), "1c.3g.20gb");
}

TEST(MigProfileName, H100_80GB) {
  EXPECT_EQ(MigProfileName(Attributes(1, 1, 9984), 81559 * kMiB), "1g.10gb");
  EXPECT_EQ(MigProfileName(Attributes(4, 4, 40448), 81559 * kMiB), "4g.40gb");
}

}  // namespace
}  // namespace gpunode::gpu
