// The exporter's profiling and per-process series as users meet them: the real binary on the
// simulator. GPM on Hopper (every series dcgm-exporter's dashboard and default counters need),
// nothing made up before Hopper, values that follow the timeline, and per-pod utilization on a
// GPU shared by time-slicing.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubelet_podresources_double.h"
#include "process.h"
#include "temp_dir.h"
#include "test_support.h"

namespace gpunode {
namespace {

namespace fs = std::filesystem;
const std::string kFixtures = build_paths::kFixturesDir;

std::string Label(const std::string& name, const std::string& value) {
  return name + "=\"" + value + "\"";
}

std::string Once(const std::vector<std::string>& global) {
  std::vector<std::string> argv = {build_paths::kBinary};
  argv.insert(argv.end(), global.begin(), global.end());
  argv.insert(argv.end(), {"exporter", "--once", "--pod-resources-socket", ""});
  testing::ProcessResult r = testing::RunProcess(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return r.out;
}

// The metric names a fixture list holds: the first metric-like word of every line.
std::set<std::string> MetricsIn(const std::string& fixture) {
  std::ifstream in(kFixtures + "/metrics/" + fixture);
  std::set<std::string> out;
  std::string line;
  std::regex name("DCGM_[A-Z0-9_]+");
  std::smatch match;
  while (std::getline(in, line)) {
    if (std::regex_search(line, match, name)) out.insert(match.str());
  }
  return out;
}

const std::vector<std::string> kProfilingFamilies = {
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_SM_OCCUPANCY",     "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",      "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
    "DCGM_FI_PROF_PCIE_TX_BYTES",    "DCGM_FI_PROF_PCIE_RX_BYTES",
    "DCGM_FI_PROF_NVLINK_TX_BYTES",  "DCGM_FI_PROF_NVLINK_RX_BYTES",
};

TEST(Profiling, DgxH100HasEveryDashboardAndDefaultSeries) {
  std::string out = Once({"--sim", "dgx-h100"});
  std::set<std::string> dashboard = MetricsIn("dcgm-exporter-dashboard-queries.txt");
  ASSERT_EQ(dashboard.size(), 6u);
  for (const std::string& metric : dashboard)
    EXPECT_EQ(testing::SampleCount(out, metric), 8) << metric;
  std::set<std::string> defaults = MetricsIn("dcgm-exporter-default-counters.txt");
  ASSERT_EQ(defaults.size(), 25u);
  for (const std::string& metric : defaults)
    EXPECT_EQ(testing::SampleCount(out, metric), 8) << metric;
  for (const std::string& metric : kProfilingFamilies)
    EXPECT_EQ(testing::SampleCount(out, metric), 8) << metric;
  EXPECT_THAT(out, ::testing::HasSubstr("# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL counter\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("# TYPE DCGM_FI_PROF_PIPE_TENSOR_ACTIVE gauge\n"));

  // GPU7 is 35% busy with memory 12%; the others idle. Ratios 0-1, rates in bytes per second.
  std::string gpu7 = Label("gpu", "7");
  EXPECT_DOUBLE_EQ(testing::SampleValue(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", {gpu7}), 0.35);
  EXPECT_DOUBLE_EQ(testing::SampleValue(out, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", {gpu7}), 0.21);
  EXPECT_DOUBLE_EQ(testing::SampleValue(out, "DCGM_FI_PROF_DRAM_ACTIVE", {gpu7}), 0.12);
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_PROF_PCIE_TX_BYTES", {gpu7}),
            std::round(0.35 * 2048 * 1024 * 1024));
  // 18 links, 20 GiB/s each at full load.
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_PROF_NVLINK_TX_BYTES", {gpu7}),
            std::round(0.35 * 18 * 20480.0 * 1024 * 1024));
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", {Label("gpu", "0")}), 0);
  EXPECT_THAT(out, ::testing::HasSubstr("DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"7\""));
  // The one process on GPU7 has all of its utilization.
  EXPECT_DOUBLE_EQ(testing::SampleValue(out, "gpunode_gpu_process_utilization_ratio",
                                        {gpu7, Label("pid", "48211")}),
                   0.35);
}

TEST(Profiling, H200WithoutNvLinkHasEverythingElse) {
  std::string out = Once({"--sim", "h200-1"});
  for (const std::string& metric : MetricsIn("dcgm-exporter-dashboard-queries.txt"))
    EXPECT_EQ(testing::SampleCount(out, metric), 1) << metric;
  for (const std::string& metric : MetricsIn("dcgm-exporter-default-counters.txt"))
    EXPECT_EQ(testing::SampleCount(out, metric), 1) << metric;
  // A single H200 has no NVLink: 0 bytes, as dcgm-exporter writes it, not a missing series.
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"), 0);
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_VGPU_LICENSE_STATUS"), 0);
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_PROF_NVLINK_TX_BYTES"), 0);
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_PROF_PCIE_RX_BYTES"), 1);
}

TEST(Profiling, BeforeHopperNothingIsMadeUp) {
  for (const char* profile : {"dgx1-v100", "a10-pcie-4", "a100-mig"}) {
    std::string out = Once({"--sim", profile});
    EXPECT_THAT(out, ::testing::Not(::testing::HasSubstr("DCGM_FI_PROF_"))) << profile;
    EXPECT_GT(testing::SampleCount(out, "DCGM_FI_DEV_GPU_TEMP"), 0) << profile;
  }
  // Volta's NVLinks still count their bytes (field values, not GPM); PCIe-only A10s count 0.
  EXPECT_EQ(
      testing::SampleCount(Once({"--sim", "dgx1-v100"}), "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"), 8);
  std::string a10 = Once({"--sim", "a10-pcie-4"});
  EXPECT_EQ(testing::SampleCount(a10, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"), 4);
  for (const char* gpu : {"0", "1", "2", "3"})
    EXPECT_EQ(testing::SampleValue(a10, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", {Label("gpu", gpu)}),
              0);
}

// Driver 535 lacks nvmlDeviceGetProcessesUtilizationInfo; per-process utilization comes from the
// older call there, with the same meaning.
TEST(Profiling, ProcessUtilizationOnADriverBefore550) {
  std::string out = Once({"--sim", "dgx1-v100"});  // GPU0: one process, 97% busy
  EXPECT_EQ(testing::SampleCount(out, "gpunode_gpu_process_utilization_ratio"), 1);
  EXPECT_DOUBLE_EQ(testing::SampleValue(out, "gpunode_gpu_process_utilization_ratio",
                                        {Label("gpu", "0"), Label("pid", "10453")}),
                   0.97);
}

TEST(Profiling, HopperMigInstancesThroughTheMigSample) {
  std::string out = Once({"--sim", kFixtures + "/metrics/h100-mig.yaml"});
  // One series per GPU instance, with its GPU_I_* labels; none for the MIG-enabled GPU itself.
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"), 2);
  EXPECT_DOUBLE_EQ(
      testing::SampleValue(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                           {Label("GPU_I_PROFILE", "3g.40gb"), Label("GPU_I_ID", "2")}),
      0.5);
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                                 {Label("GPU_I_PROFILE", "1g.10gb"), Label("GPU_I_ID", "9")}),
            1);
}

TEST(Profiling, HelpSaysWhatNeedsHopper) {
  testing::ProcessResult r = testing::RunProcess({build_paths::kBinary, "exporter", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("Hopper"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("DCGM_FI_PROF_"));
}

// ---- Served ----

class Served {
 public:
  explicit Served(const std::vector<std::string>& args, const std::vector<std::string>& env = {})
      : port_(testing::FreeLoopbackPort()) {
    std::vector<std::string> argv = {build_paths::kBinary};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--listen", "127.0.0.1:" + std::to_string(port_), "--interval",
                             "200ms", "--hostname", "node-7"});
    process_ = std::make_unique<testing::BackgroundProcess>(argv, env);
    ready_ = testing::Eventually([&] { return testing::HttpGet(port_, "/healthz").status == 200; });
  }
  bool ready() const { return ready_; }
  std::string Metrics() { return testing::HttpGet(port_, "/metrics").body; }
  testing::BackgroundProcess& process() { return *process_; }

 private:
  int port_;
  std::unique_ptr<testing::BackgroundProcess> process_;
  bool ready_ = false;
};

TEST(Profiling, ValuesAndCountersFollowTheTimeline) {
  // The GPU idles for two simulated seconds (20 ms of real time), then is fully busy.
  Served served({"--sim", kFixtures + "/metrics/hopper-timeline.yaml", "exporter",
                 "--pod-resources-socket", ""},
                {"GPUNODE_SIM_CLOCK_SCALE=100"});
  ASSERT_TRUE(served.ready()) << served.process().Stderr();
  std::string out;
  ASSERT_TRUE(testing::Eventually([&] {
    out = served.Metrics();
    return testing::SampleValue(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE") == 1;
  })) << out;
  EXPECT_DOUBLE_EQ(testing::SampleValue(out, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"), 0.6);
  EXPECT_DOUBLE_EQ(testing::SampleValue(out, "DCGM_FI_PROF_DRAM_ACTIVE"), 0.5);
  EXPECT_EQ(served.process().Stop(SIGTERM), 0) << served.process().Stderr();
}

TEST(Profiling, NvLinkBandwidthTotalGrowsWhileBusy) {
  Served served({"--sim", "dgx-h100", "exporter", "--pod-resources-socket", ""});
  ASSERT_TRUE(served.ready()) << served.process().Stderr();
  std::string gpu7 = Label("gpu", "7");
  double first =
      testing::SampleValue(served.Metrics(), "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", {gpu7});
  EXPECT_TRUE(testing::Eventually([&] {
    return testing::SampleValue(served.Metrics(), "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", {gpu7}) >
           first;
  }));
  // An idle GPU moves nothing.
  EXPECT_EQ(testing::SampleValue(served.Metrics(), "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
                                 {Label("gpu", "0")}),
            0);
  EXPECT_EQ(served.process().Stop(SIGTERM), 0);
}

// One H100 time-sliced between two pods (see the fixture's header).
class SharedHopper : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::copy(kFixtures + "/metrics/host", root_.path(), fs::copy_options::recursive);
    kubelet_ = std::make_unique<testing::KubeletPodResourcesDouble>(
        root_.path() + "/var/lib/kubelet/pod-resources/kubelet.sock");
    kubelet_->SetPods(
        {{"team-c", "infer-2", {{"server", {{"nvidia.com/gpu", {kGpu + "::0"}}}}}},
         {"team-b", "notebook-1", {{"jupyter", {{"nvidia.com/gpu", {kGpu + "::1"}}}}}}});
  }

  static inline const std::string kGpu = "GPU-aaaaaaaa-0000-4000-8000-000000000001";
  testing::TempDir root_{"gpunode-shared"};
  std::unique_ptr<testing::KubeletPodResourcesDouble> kubelet_;
};

TEST_F(SharedHopper, UtilizationAndMemoryPerPodFromTheirProcesses) {
  Served served(
      {"--sim", kFixtures + "/metrics/shared-h100.yaml", "--host-root", root_.path(), "exporter"});
  ASSERT_TRUE(served.ready()) << served.process().Stderr();
  std::string out;
  ASSERT_TRUE(testing::Eventually([&] {
    out = served.Metrics();
    return testing::SampleValue(out, "gpunode_pod_resources_up") == 1;
  })) << out;
  std::string infer = Label("pod", "infer-2"), notebook = Label("pod", "notebook-1");

  // The whole GPU keeps its own series, without pod labels; each pod gets its processes' share.
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_GPU_UTIL"), 3);
  EXPECT_THAT(out, ::testing::HasSubstr(
                       "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"" + kGpu +
                       "\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\",modelName=\"NVIDIA "
                       "H100 80GB HBM3\",Hostname=\"node-7\",DCGM_FI_DRIVER_VERSION=\"550.90.07\"} "
                       "80\n"));
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_GPU_UTIL", {infer, Label("vgpu", "0")}), 40);
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_GPU_UTIL", {notebook, Label("vgpu", "1")}), 40);
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_FB_USED", {infer}), 2048);
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_FB_USED", {notebook}), 1024);
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_FB_USED"), 3);
  // Per process, with the pod that runs it.
  EXPECT_DOUBLE_EQ(testing::SampleValue(out, "gpunode_gpu_process_utilization_ratio",
                                        {Label("pid", "1005"), infer}),
                   0.4);
  // Tensor Core activity per pod: the panel's query grouped by pod has data.
  EXPECT_DOUBLE_EQ(testing::SampleValue(out, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", {infer}), 0.48);
  EXPECT_DOUBLE_EQ(testing::SampleValue(out, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", {notebook}), 0.48);
  EXPECT_EQ(served.process().Stop(SIGTERM), 0) << served.process().Stderr();
}

}  // namespace
}  // namespace gpunode
