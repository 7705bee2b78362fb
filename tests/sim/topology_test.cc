// `nvidia-smi topo -m` captures given beside a profile or capture (--sim-topology): every layout
// nvidia-smi prints is read, and NVML then reproduces the matrix exactly.
#include "sim_library.h"

namespace gpunode::sim::testing {
namespace {

class TopologyTest : public SimTest {};

// The DGX-1V layout as nvidia-smi prints it on a DGX-1 with four InfiniBand NICs: tab separated,
// NIC columns and rows, CPU Affinity only, a legend after.
const std::string kDgx1 =
    "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tmlx5_0\tmlx5_2\tmlx5_1\tmlx5_3\tCPU "
    "Affinity\n"
    "GPU0\t X \tNV1\tNV1\tNV2\tNV2\tSYS\tSYS\tSYS\tPIX\tSYS\tPHB\tSYS\t0-19,40-59\n"
    "GPU1\tNV1\t X \tNV2\tNV1\tSYS\tNV2\tSYS\tSYS\tPIX\tSYS\tPHB\tSYS\t0-19,40-59\n"
    "GPU2\tNV1\tNV2\t X \tNV2\tSYS\tSYS\tNV1\tSYS\tPHB\tSYS\tPIX\tSYS\t0-19,40-59\n"
    "GPU3\tNV2\tNV1\tNV2\t X \tSYS\tSYS\tSYS\tNV1\tPHB\tSYS\tPIX\tSYS\t0-19,40-59\n"
    "GPU4\tNV2\tSYS\tSYS\tSYS\t X \tNV1\tNV1\tNV2\tSYS\tPIX\tSYS\tPHB\t20-39,60-79\n"
    "GPU5\tSYS\tNV2\tSYS\tSYS\tNV1\t X \tNV2\tNV1\tSYS\tPIX\tSYS\tPHB\t20-39,60-79\n"
    "GPU6\tSYS\tSYS\tNV1\tSYS\tNV1\tNV2\t X \tNV2\tSYS\tPHB\tSYS\tPIX\t20-39,60-79\n"
    "GPU7\tSYS\tSYS\tSYS\tNV1\tNV2\tNV1\tNV2\t X \tSYS\tPHB\tSYS\tPIX\t20-39,60-79\n"
    "mlx5_0\tPIX\tPIX\tPHB\tPHB\tSYS\tSYS\tSYS\tSYS\t X \tSYS\tPHB\tSYS\t\n"
    "mlx5_2\tSYS\tSYS\tSYS\tSYS\tPIX\tPIX\tPHB\tPHB\tSYS\t X \tSYS\tPHB\t\n"
    "\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP "
    "interconnect\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n";

TEST_F(TopologyTest, Dgx1CaptureOverAnotherNode) {
  // The DGX-1 matrix applied to dgx-h100's eight GPUs: the links follow the capture.
  start("dgx-h100", write_file("dgx1.txt", kDgx1));
  std::vector<std::string> expected = {
      "X NV1 NV1 NV2 NV2 SYS SYS SYS", "NV1 X NV2 NV1 SYS NV2 SYS SYS",
      "NV1 NV2 X NV2 SYS SYS NV1 SYS", "NV2 NV1 NV2 X SYS SYS SYS NV1",
      "NV2 SYS SYS SYS X NV1 NV1 NV2", "SYS NV2 SYS SYS NV1 X NV2 NV1",
      "SYS SYS NV1 SYS NV1 NV2 X NV2", "SYS SYS SYS NV1 NV2 NV1 NV2 X",
  };
  EXPECT_EQ(topology_matrix(), expected);
  // Without a NUMA Affinity column, GPUs that share a CPU set share a NUMA node.
  for (unsigned i = 0; i < 8; ++i) {
    unsigned node = 9;
    ASSERT_EQ(api().device_get_numa_node_id(gpu(i), &node), NVML_SUCCESS);
    EXPECT_EQ(node, i < 4 ? 0u : 1u);
  }
}

TEST_F(TopologyTest, NewerLayoutWithNumaColumnsAndSpaces) {
  // Driver 535+ layout: NIC columns, CPU Affinity, NUMA Affinity, GPU NUMA ID; spaces, not tabs.
  std::string text =
      "        GPU0    GPU1    GPU2    GPU3    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA "
      "ID\n"
      "GPU0     X      PXB     NODE    SYS     PIX     0-23,48-71      0               N/A\n"
      "GPU1    PXB      X      NODE    SYS     PXB     0-23,48-71      0               N/A\n"
      "GPU2    NODE    NODE     X      SYS     NODE    0-23,48-71      0               N/A\n"
      "GPU3    SYS     SYS     SYS      X      SYS     24-47,72-95     1               N/A\n"
      "NIC0    PIX     PXB     NODE    SYS      X\n"
      "\n"
      "Legend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n";
  start("a10-pcie-4", write_file("topo.txt", text));
  std::vector<std::string> expected = {"X PXB NODE SYS", "PXB X NODE SYS", "NODE NODE X SYS",
                                       "SYS SYS SYS X"};
  EXPECT_EQ(topology_matrix(), expected);
  unsigned node = 9;
  ASSERT_EQ(api().device_get_numa_node_id(gpu(3), &node), NVML_SUCCESS);
  EXPECT_EQ(node, 1u);
}

TEST_F(TopologyTest, FullMeshNeedsNvSwitches) {
  // NV18 between all eight GPUs is 126 links per GPU, more than NVML's 36: only NVSwitches give
  // that, and the simulator builds them.
  std::string text = "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\n";
  for (int r = 0; r < 8; ++r) {
    text += "GPU" + std::to_string(r);
    for (int c = 0; c < 8; ++c) text += r == c ? "\t X " : "\tNV18";
    text += "\n";
  }
  start("dgx1-v100", write_file("mesh.txt", text));
  std::vector<std::string> rows = topology_matrix();
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0], "X NV18 NV18 NV18 NV18 NV18 NV18 NV18");
  EXPECT_EQ(rows[7], "NV18 NV18 NV18 NV18 NV18 NV18 NV18 X");
}

TEST_F(TopologyTest, CaptureWithTopology) {
  std::string text = "\tGPU0\tCPU Affinity\tNUMA Affinity\n GPU0\t X \t0-7\tN/A\n";
  start(fixture("rtx-4090-driver-535.xml"), write_file("one.txt", text));
  unsigned node = 0;
  EXPECT_EQ(api().device_get_numa_node_id(gpu(0), &node),
            NVML_ERROR_NOT_SUPPORTED);  // N/A in the capture
  EXPECT_EQ(topology_matrix(), std::vector<std::string>{"X"});
}

TEST_F(TopologyTest, ImpossibleLinkCounts) {
  // 20 + 20 links on GPU0 exceed 36, and the group is not uniform, so no NVSwitch layout fits.
  std::string text =
      "\tGPU0\tGPU1\tGPU2\n"
      "GPU0\t X \tNV20\tNV20\n"
      "GPU1\tNV20\t X \tNV2\n"
      "GPU2\tNV20\tNV2\t X \n";
  std::string path = write_file("bad.txt", text);
  std::string error = configure(fixture("rtx-3060.xml"), path);
  EXPECT_NE(error.find(path + ": the matrix has 3 GPUs but the node has 1"), std::string::npos)
      << error;
  std::string three_gpus = write_file("three.yaml", R"(gpus:
  - {name: G, bus_id: 0000:01:00.0}
  - {name: G, bus_id: 0000:02:00.0}
  - {name: G, bus_id: 0000:03:00.0}
)");
  error = configure(three_gpus, path);
  EXPECT_NE(error.find(path + ": GPU0's NVLink cells add up to 40 links, more than NVML's 36"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace gpunode::sim::testing
