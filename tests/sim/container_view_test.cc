// The simulator's container view (GPUNODE_SIM_DEVICE_NODES): NVML in a container shows only the
// GPUs whose device nodes the runtime created there.
#include "container_view.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "spec_loader.h"

namespace gpunode::sim {
namespace {

class ContainerViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dev_ = std::filesystem::temp_directory_path() /
           ("gpunode-sim-dev-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dev_);
  }
  void TearDown() override { std::filesystem::remove_all(dev_); }
  void Node(const std::string& name) { std::ofstream(dev_ / name).put('\n'); }

  std::filesystem::path dev_;
};

TEST_F(ContainerViewTest, KeepsTheGpusWhoseNodesAreThereRenumberedWithTheirMinors) {
  auto node = load_spec("dgx-h100", "");
  ASSERT_TRUE(node.ok()) << node.error();
  NodeModel model = node.value();
  Node("nvidia2");
  Node("nvidia5");
  Node("nvidiactl");  // not a GPU
  std::string error;
  ASSERT_TRUE(keep_gpus_with_device_nodes(model, dev_.string(), error)) << error;
  ASSERT_EQ(model.gpus.size(), 2u);
  EXPECT_EQ(model.gpus[0].uuid, node.value().gpus[2].uuid);
  EXPECT_EQ(model.gpus[1].uuid, node.value().gpus[5].uuid);
  EXPECT_EQ(model.gpus[0].minor_number, 2u);
  EXPECT_EQ(model.gpus[1].minor_number, 5u);
  ASSERT_EQ(model.pcie_levels.size(), 2u);
  EXPECT_EQ(model.pcie_levels[0][1], node.value().pcie_levels[2][5]);
  EXPECT_EQ(model.pcie_levels[1][0], node.value().pcie_levels[5][2]);
}

TEST_F(ContainerViewTest, TheTimelineFollowsTheKeptGpus) {
  auto node = load_spec("dgx-h100", "");
  ASSERT_TRUE(node.ok()) << node.error();
  NodeModel model = node.value();
  for (auto [gpu, xid] : {std::pair{1u, 43ull}, {3u, 79ull}, {6u, 13ull}}) {
    TimelineEvent& event = model.timeline.emplace_back();
    event.gpu = gpu;
    event.xid = xid;
  }
  Node("nvidia3");
  Node("nvidia6");
  std::string error;
  ASSERT_TRUE(keep_gpus_with_device_nodes(model, dev_.string(), error)) << error;
  ASSERT_EQ(model.timeline.size(), 2u);
  EXPECT_EQ(model.timeline[0].gpu, 0u);
  EXPECT_EQ(model.timeline[0].xid, 79u);
  EXPECT_EQ(model.timeline[1].gpu, 1u);
  EXPECT_EQ(model.timeline[1].xid, 13u);
}

TEST_F(ContainerViewTest, NoNodesNoGpusAndAMissingDirectoryIsOneLine) {
  auto node = load_spec("dgx-h100", "");
  ASSERT_TRUE(node.ok()) << node.error();
  NodeModel model = node.value();
  std::string error;
  ASSERT_TRUE(keep_gpus_with_device_nodes(model, dev_.string(), error)) << error;
  EXPECT_TRUE(model.gpus.empty());
  EXPECT_TRUE(model.pcie_levels.empty());

  model = node.value();
  EXPECT_FALSE(keep_gpus_with_device_nodes(model, (dev_ / "absent").string(), error));
  EXPECT_NE(error.find("GPUNODE_SIM_DEVICE_NODES"), std::string::npos) << error;
  EXPECT_NE(error.find("is not a directory"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_EQ(model.gpus.size(), node.value().gpus.size());  // nothing changed
}

}  // namespace
}  // namespace gpunode::sim
