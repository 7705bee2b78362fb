#include "gpu/topology.h"
#include "gtest/gtest.h"

namespace gpunode::gpu {
namespace {

TEST(NvLinkCount, DirectLinksAreCountedPerPair) {
  LinkInputs in;
  in.bus_ids = {"A", "B", "C"};
  in.nvlink_remotes = {{"B", "B", "C"}, {"A", "A"}, {"A"}};
  EXPECT_EQ(NvLinkCount(in, 0, 1), 2);
  EXPECT_EQ(NvLinkCount(in, 1, 0), 2);
  EXPECT_EQ(NvLinkCount(in, 0, 2), 1);
  EXPECT_EQ(NvLinkCount(in, 1, 2), 0);
}

TEST(NvLinkCount, SwitchedLinksCountTheSharedSwitchLinks) {
  LinkInputs in;
  in.bus_ids = {"G0", "G1", "G2"};
  // G0 and G1 each have 2 links to each of switches S0 and S1; G2 only reaches S2.
  in.nvlink_remotes = {{"S0", "S0", "S1", "S1"}, {"S0", "S1", "S0", "S1"}, {"S2"}};
  EXPECT_EQ(NvLinkCount(in, 0, 1), 4);
  EXPECT_EQ(NvLinkCount(in, 1, 0), 4);
  EXPECT_EQ(NvLinkCount(in, 0, 2), 0);
}

TEST(LinkMatrix, FallsBackToPcieLevels) {
  LinkInputs in;
  in.bus_ids = {"A", "B", "C"};
  in.nvlink_remotes = {{"B"}, {"A"}, {}};
  auto matrix = LinkMatrix(in, [](size_t a, size_t b) -> absl::StatusOr<nvmlGpuTopologyLevel_t> {
    if (a + b == 2) return NVML_TOPOLOGY_SINGLE;  // 0-2
    if (a + b == 3) return absl::UnavailableError("lost");
    return NVML_TOPOLOGY_SYSTEM;
  });
  EXPECT_EQ(matrix[0][0], "X");
  EXPECT_EQ(matrix[0][1], "NV1");
  EXPECT_EQ(matrix[0][2], "PIX");
  EXPECT_FALSE(matrix[1][2].has_value());
}

TEST(PcieLabel, MapsEveryLevel) {
  EXPECT_EQ(PcieLabel(NVML_TOPOLOGY_INTERNAL), "X");
  EXPECT_EQ(PcieLabel(NVML_TOPOLOGY_SINGLE), "PIX");
  EXPECT_EQ(PcieLabel(NVML_TOPOLOGY_MULTIPLE), "PXB");
  EXPECT_EQ(PcieLabel(NVML_TOPOLOGY_HOSTBRIDGE), "PHB");
  EXPECT_EQ(PcieLabel(NVML_TOPOLOGY_NODE), "NODE");
  EXPECT_EQ(PcieLabel(NVML_TOPOLOGY_SYSTEM), "SYS");
}

}  // namespace
}  // namespace gpunode::gpu
