// gpu-pod-idle against a real Prometheus (Debian's) on loopback, which scrapes a small target
// serving DCGM_FI_DEV_GPU_UTIL with the pod labels gpunode's exporter and dcgm-exporter use.
#include "cluster/prometheus_idle.h"

#include <signal.h>

#include <thread>

#include "build_paths.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "metrics/test_support.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"

namespace gpunode {
namespace {

using json = nlohmann::json;

const std::string kFixture = std::string(build_paths::kClusterFixtures) + "/gpu-pod-idle.json";

// notebook-alice's GPU is idle; train-llama's two GPUs are not both idle (one is busy); eval-0
// has no series (its exporter is down); GPU 4 belongs to no pod.
constexpr char kExposition[] =
    "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-5d5a3c1e-0000-4000-8000-000000000000\","
    "Hostname=\"gpu-a\",modelName=\"NVIDIA H100 80GB HBM3\",container=\"main\","
    "namespace=\"research\",pod=\"notebook-alice\"} 0\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-5d5a3c1e-0000-4000-8000-000000000001\","
    "Hostname=\"gpu-a\",modelName=\"NVIDIA H100 80GB HBM3\",container=\"main\","
    "namespace=\"ml\",pod=\"train-llama-x7k2p\"} 2\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"2\",UUID=\"GPU-5d5a3c1e-0000-4000-8000-000000000002\","
    "Hostname=\"gpu-a\",modelName=\"NVIDIA H100 80GB HBM3\",container=\"main\","
    "namespace=\"ml\",pod=\"train-llama-x7k2p\"} 93\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"4\",UUID=\"GPU-5d5a3c1e-0000-4000-8000-000000000004\","
    "Hostname=\"gpu-a\",modelName=\"NVIDIA H100 80GB HBM3\"} 0\n";

class IdleGpuPods : public ::testing::Test {
 protected:
  void SetUp() override {
    target_.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(kExposition, "text/plain; version=0.0.4");
    });
    target_port_ = target_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(target_port_, 0);
    target_thread_ = std::thread([this] { target_.listen_after_bind(); });
    // stop() does nothing until the loop runs; TearDown must not join a server it missed.
    while (!target_.is_running()) std::this_thread::yield();
    prometheus_port_ = testing::FreeLoopbackPort();
    testing::WriteText(dir_.path() + "/prometheus.yml",
                       "global:\n"
                       "  scrape_interval: 1s\n"
                       "scrape_configs:\n"
                       "  - job_name: dcgm\n"
                       "    static_configs:\n"
                       "      - targets: ['127.0.0.1:" +
                           std::to_string(target_port_) + "']\n");
    prometheus_ = std::make_unique<testing::BackgroundProcess>(std::vector<std::string>{
        PROMETHEUS, "--config.file=" + dir_.path() + "/prometheus.yml",
        "--storage.tsdb.path=" + dir_.path() + "/data",
        "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_)});
  }
  void TearDown() override {
    if (prometheus_) prometheus_->Stop(SIGTERM);
    target_.stop();
    if (target_thread_.joinable()) target_thread_.join();
  }

  testing::TempDir dir_{"gpunode-idle"};
  httplib::Server target_;
  std::thread target_thread_;
  int target_port_ = 0, prometheus_port_ = 0;
  std::unique_ptr<testing::BackgroundProcess> prometheus_;
};

// Members of the wrong type in whatever --prometheus answers are an input error, never a crash.
TEST(UtilizationAnswer, MistypedMembersAreRefused) {
  for (const char* body : {
           R"({"status": {"resultType": "vector"}})",
           R"({"status": "error", "error": {"why": 1}})",
           R"({"status": "success", "data": {"resultType": ["vector"], "result": []}})",
       }) {
    EXPECT_FALSE(cluster::ParseUtilizationAnswer(body).ok()) << body;
  }
}

TEST_F(IdleGpuPods, ReportedFromDcgmUtilizationInPrometheus) {
  // Wait until Prometheus has scraped the four series.
  ASSERT_TRUE(testing::Eventually(
      [&] {
        testing::HttpResult r =
            testing::HttpGet(prometheus_port_, "/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL");
        json body = json::parse(r.body, nullptr, false);
        return r.status == 200 && !body.is_discarded() && body["data"]["result"].size() == 4;
      },
      std::chrono::seconds(60)))
      << prometheus_->Stderr();

  std::string url = "http://127.0.0.1:" + std::to_string(prometheus_port_);
  testing::ProcessResult r =
      testing::RunProcess({build_paths::kBinary, "cluster", "audit", "-f", kFixture, "-o", "json",
                           "--prometheus", url, "--idle-for", "1m", "--idle-util", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> idle;
  json report = json::parse(r.out);
  for (const json& f : report["findings"]) {
    if (f["id"] == "gpu-pod-idle") idle.push_back(f["object"]);
  }
  EXPECT_EQ(idle, std::vector<std::string>{"pod/research/notebook-alice"}) << r.out;
  for (const json& f : report["findings"]) {
    if (f["id"] != "gpu-pod-idle") continue;
    EXPECT_EQ(f["message"],
              "pod research/notebook-alice holds 1 nvidia.com/gpu on node gpu-a but its GPUs were "
              "at most 0% busy over the last 1m (below --idle-util 5%; max by (namespace, pod) "
              "(max_over_time(DCGM_FI_DEV_GPU_UTIL{pod!=\"\"}[60s])))");
  }

  // Above the busy GPU's 93%, train-llama's pod counts as idle too.
  r = testing::RunProcess({build_paths::kBinary, "cluster", "audit", "-f", kFixture, "-o", "json",
                           "--prometheus", url + "/", "--idle-for", "1m", "--idle-util", "95"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int count = 0;
  report = json::parse(r.out);
  for (const json& f : report["findings"]) count += f["id"] == "gpu-pod-idle";
  EXPECT_EQ(count, 2) << r.out;

  // A URL that is not Prometheus is an input error, named.
  r = testing::RunProcess({build_paths::kBinary, "cluster", "audit", "-f", kFixture, "--prometheus",
                           "http://127.0.0.1:" + std::to_string(target_port_)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--prometheus http://127.0.0.1:" + std::to_string(target_port_) +
                       ": GET /api/v1/query: 404"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace gpunode
