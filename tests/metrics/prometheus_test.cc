// A real Prometheus (Debian's) on loopback scrapes a real exporter; PromQL gives back the
// simulated values, and the alerting expressions of deploy/ evaluate on them.
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubelet_podresources_double.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"
#include "test_support.h"

namespace gpunode {
namespace {

using json = nlohmann::json;

class RealPrometheus : public ::testing::Test {
 protected:
  // The exporter's global options and exporter options before --listen.
  virtual std::vector<std::string> ExporterArgs() {
    return {"--sim", std::string(build_paths::kFixturesDir) + "/metrics/zombie-node.yaml",
            "exporter", "--pod-resources-socket", ""};
  }

  void SetUp() override {
    exporter_port_ = testing::FreeLoopbackPort();
    std::vector<std::string> argv = {build_paths::kBinary};
    for (const std::string& arg : ExporterArgs()) argv.push_back(arg);
    argv.insert(argv.end(), {"--listen", "127.0.0.1:" + std::to_string(exporter_port_),
                             "--interval", "200ms", "--hostname", "node-9"});
    exporter_ = std::make_unique<testing::BackgroundProcess>(argv);
    prometheus_port_ = testing::FreeLoopbackPort();
    testing::WriteText(dir_.path() + "/prometheus.yml",
                       "global:\n"
                       "  scrape_interval: 1s\n"
                       "  evaluation_interval: 1s\n"
                       "scrape_configs:\n"
                       "  - job_name: gpunode-exporter\n"
                       "    static_configs:\n"
                       "      - targets: ['127.0.0.1:" +
                           std::to_string(exporter_port_) + "']\n");
    prometheus_ = std::make_unique<testing::BackgroundProcess>(std::vector<std::string>{
        PROMETHEUS, "--config.file=" + dir_.path() + "/prometheus.yml",
        "--storage.tsdb.path=" + dir_.path() + "/data",
        "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_)});
  }

  // The instant vector of `query`, or an empty array.
  json Query(const std::string& query) {
    httplib_query_ = "/api/v1/query?query=" + testing::UrlEncode(query);
    testing::HttpResult r = testing::HttpGet(prometheus_port_, httplib_query_);
    if (r.status != 200) return json::array();
    json body = json::parse(r.body, nullptr, false);
    if (body.is_discarded() || body["status"] != "success") return json::array();
    return body["data"]["result"];
  }

  testing::TempDir dir_{"gpunode-prometheus"};
  int exporter_port_ = 0, prometheus_port_ = 0;
  std::unique_ptr<testing::BackgroundProcess> exporter_, prometheus_;
  std::string httplib_query_;
};

TEST_F(RealPrometheus, ScrapesTheExporterAndAnswersPromQL) {
  ASSERT_TRUE(testing::Eventually(
      [&] { return testing::HttpGet(prometheus_port_, "/-/ready").status == 200; },
      std::chrono::seconds(30)))
      << prometheus_->Stderr();
  json result;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        result = Query(R"(DCGM_FI_DEV_GPU_TEMP{gpu="2",Hostname="node-9"})");
        return result.size() == 1;
      },
      std::chrono::seconds(30)))
      << prometheus_->Stderr();
  EXPECT_EQ(result[0]["value"][1], "35");
  EXPECT_EQ(result[0]["metric"]["modelName"], "NVIDIA A10");
  EXPECT_EQ(result[0]["metric"]["job"], "gpunode-exporter");

  result = Query("up");
  ASSERT_EQ(result.size(), 1u);
  EXPECT_EQ(result[0]["value"][1], "1");
  result = Query("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"}");
  ASSERT_EQ(result.size(), 1u);
  EXPECT_EQ(result[0]["value"][1], "60.5");
  // The memory alert's expression has something to divide by.
  result = Query("DCGM_FI_DEV_FB_USED / DCGM_FI_DEV_FB_TOTAL");
  EXPECT_EQ(result.size(), 4u);
  result = Query("count(gpunode_gpu_health == 1)");
  ASSERT_EQ(result.size(), 1u);
  EXPECT_EQ(result[0]["value"][1], "4");
  EXPECT_EQ(exporter_->Stop(SIGTERM), 0);
  prometheus_->Stop(SIGTERM);
}

// One H100 time-sliced between two pods (tests/fixtures/metrics/shared-h100.yaml), attributed
// through the kubelet double: a Grafana-style Tensor Core panel per pod has data.
class RealPrometheusOnSharedHopper : public RealPrometheus {
 protected:
  std::vector<std::string> ExporterArgs() override {
    std::filesystem::copy(std::string(build_paths::kFixturesDir) + "/metrics/host", root_.path(),
                          std::filesystem::copy_options::recursive);
    kubelet_ = std::make_unique<testing::KubeletPodResourcesDouble>(
        root_.path() + "/var/lib/kubelet/pod-resources/kubelet.sock");
    const std::string gpu = "GPU-aaaaaaaa-0000-4000-8000-000000000001";
    kubelet_->SetPods(
        {{"team-c", "infer-2", {{"server", {{"nvidia.com/gpu", {gpu + "::0"}}}}}},
         {"team-b", "notebook-1", {{"jupyter", {{"nvidia.com/gpu", {gpu + "::1"}}}}}}});
    return {"--sim", std::string(build_paths::kFixturesDir) + "/metrics/shared-h100.yaml",
            "--host-root", root_.path(), "exporter"};
  }

  testing::TempDir root_{"gpunode-prometheus-shared"};
  std::unique_ptr<testing::KubeletPodResourcesDouble> kubelet_;
};

TEST_F(RealPrometheusOnSharedHopper, TensorCoreActivityPerPod) {
  ASSERT_TRUE(testing::Eventually(
      [&] { return testing::HttpGet(prometheus_port_, "/-/ready").status == 200; },
      std::chrono::seconds(30)))
      << prometheus_->Stderr();
  json result;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        result = Query(R"(avg by (namespace, pod) (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{pod!=""}))");
        return result.size() == 2;
      },
      std::chrono::seconds(30)))
      << exporter_->Stderr();
  for (const json& series : result) {
    EXPECT_EQ(series["value"][1], "0.48") << series.dump();
    EXPECT_THAT(std::string(series["metric"]["pod"]), ::testing::AnyOf("infer-2", "notebook-1"));
  }
  // Utilization per pod from its processes, and the GPU's own without pod labels.
  result = Query(R"(sum by (pod) (DCGM_FI_DEV_GPU_UTIL{pod!=""}))");
  ASSERT_EQ(result.size(), 2u);
  EXPECT_EQ(result[0]["value"][1], "40");
  result = Query(R"(DCGM_FI_DEV_GPU_UTIL{pod=""})");
  ASSERT_EQ(result.size(), 1u);
  EXPECT_EQ(result[0]["value"][1], "80");
  EXPECT_EQ(exporter_->Stop(SIGTERM), 0);
  prometheus_->Stop(SIGTERM);
}

}  // namespace
}  // namespace gpunode
