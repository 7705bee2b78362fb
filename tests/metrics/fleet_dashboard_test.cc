// deploy/exporter/fleet-dashboard.json against what a cluster's Prometheus really has: four
// simulated GPU nodes' exporters and the real kube-state-metrics reading the real apiserver's
// Nodes (their allocatable GPUs, cordons and the labels gpunode's roles set), scraped by Debian's
// Prometheus. Every query of every panel must return series, and the per-node numbers must be
// the nodes' own. Label real-cluster: it needs scripts/build-k8s.sh's and
// scripts/build-kube-state-metrics.sh's programs.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubelet_podresources_double.h"
#include "local_cluster.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"
#include "test_support.h"

namespace gpunode {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const std::string kSource = build_paths::kSourceDir;
const std::string kFixtures = build_paths::kFixturesDir;

// The node labels the dashboard reads, as docs/METRICS.md tells kube-state-metrics to allow them.
const char kNodeLabelsAllowlist[] =
    "nodes=[nvidia.com/gpu.product,nvidia.com/gpu.state,nvidia.com/gpu-driver-upgrade-state,"
    "nvidia.com/gpu.sharing-strategy,nvidia.com/gpu.replicas,nvidia.com/mig.config,"
    "nvidia.com/mig.config.state]";

// What Grafana puts in place of the dashboard's variables when every node is selected.
std::string AsGrafanaSends(std::string expr) {
  for (const auto& [variable, value] : std::vector<std::pair<std::string, std::string>>{
           {"$__rate_interval", "1m"}, {"$node", ".*"}}) {
    for (size_t at = expr.find(variable); at != std::string::npos; at = expr.find(variable, at))
      expr.replace(at, variable.size(), value);
  }
  return expr;
}

class FleetDashboard : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    testing::ProcessResult where = testing::RunProcess(
        {"/bin/bash", kSource + "/scripts/build-kube-state-metrics.sh", "--print-dir"});
    kube_state_metrics_ = where.out.substr(0, where.out.find('\n')) + "/kube-state-metrics";
    if (!fs::exists(kube_state_metrics_)) return;
    cluster_ = new testing::LocalCluster();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    if (cluster_ == nullptr) {
      GTEST_SKIP() << "kube-state-metrics is not built (" << kube_state_metrics_
                   << "): run scripts/build-kube-state-metrics.sh (scripts/test.sh does)";
    }
    if (!cluster_->missing().empty()) GTEST_SKIP() << cluster_->missing();
    ASSERT_TRUE(cluster_->error().empty()) << cluster_->error();
  }

  testing::ProcessResult Kubectl(const std::vector<std::string>& args,
                                 const std::string& input = "") {
    return cluster_->Kubectl(args, input);
  }

  testing::ProcessResult Gpunode(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {build_paths::kBinary};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunProcess(argv, {"KUBECONFIG=" + cluster_->admin_kubeconfig()});
  }

  // A Node as the kubelet would register it, with `resources` as its capacity and allocatable
  // (what the device plugin advertised).
  void AddNode(const std::string& name, const json& resources) {
    json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}}};
    testing::ProcessResult r = Kubectl({"apply", "-f", "-"}, node.dump());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json status = {{"status", {{"capacity", resources}, {"allocatable", resources}}}};
    r = Kubectl(
        {"patch", "node", name, "--subresource=status", "--type=merge", "-p", status.dump()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // The exporter of `node`; with `attribution`, it asks the kubelet's PodResources socket under
  // its --host-root.
  void StartExporter(const std::string& node, const std::vector<std::string>& global,
                     bool attribution = false) {
    int port = testing::FreeLoopbackPort();
    std::vector<std::string> argv = {build_paths::kBinary};
    argv.insert(argv.end(), global.begin(), global.end());
    argv.insert(argv.end(), {"exporter", "--listen", "127.0.0.1:" + std::to_string(port),
                             "--interval", "500ms", "--hostname", node});
    if (!attribution) argv.insert(argv.end(), {"--pod-resources-socket", ""});
    exporters_.push_back(std::make_unique<testing::BackgroundProcess>(argv));
    exporter_ports_.push_back(port);
  }

  json Query(const std::string& query) {
    testing::HttpResult r =
        testing::HttpGet(prometheus_port_, "/api/v1/query?query=" + testing::UrlEncode(query));
    if (r.status != 200) return json::array();
    json body = json::parse(r.body, nullptr, false);
    if (body.is_discarded() || body["status"] != "success") return json::array();
    return body["data"]["result"];
  }

  // The series of `query` once it has `count` of them (or the last answer after 60 s).
  json AwaitSeries(const std::string& query, size_t count = 1) {
    json result;
    testing::Eventually(
        [&] {
          result = Query(query);
          return result.size() >= count;
        },
        std::chrono::seconds(60));
    return result;
  }

  // The value of the series of `result` that has every label of `labels`, as Prometheus writes
  // it.
  static std::string ValueOf(const json& result, const std::map<std::string, std::string>& labels) {
    for (const json& series : result) {
      bool match = true;
      for (const auto& [name, value] : labels)
        match = match && series["metric"].contains(name) && series["metric"][name] == value;
      if (match) return series["value"][1].get<std::string>();
    }
    return "(no series with those labels in " + result.dump() + ")";
  }

  static testing::LocalCluster* cluster_;
  static std::string kube_state_metrics_;
  testing::TempDir dir_{"gpunode-fleet"};
  std::vector<std::unique_ptr<testing::BackgroundProcess>> exporters_;
  std::vector<int> exporter_ports_;
  std::unique_ptr<testing::BackgroundProcess> kube_state_metrics_process_, prometheus_;
  std::unique_ptr<testing::KubeletPodResourcesDouble> kubelet_;
  int prometheus_port_ = 0;
};

testing::LocalCluster* FleetDashboard::cluster_ = nullptr;
std::string FleetDashboard::kube_state_metrics_;

TEST_F(FleetDashboard, EveryQueryHasSeriesAndEachNodeItsOwnNumbers) {
  // gpu-a: a DGX H100 time-sliced four ways, waiting for a driver upgrade.
  AddNode("gpu-a", {{"nvidia.com/gpu", "32"}});
  testing::ProcessResult r =
      Gpunode({"--sim", "dgx-h100", "labels", "--write", "node", "--node-name", "gpu-a",
               "--oneshot", "--config-file", kFixtures + "/plugin/time-slicing-4.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // What `gpunode cluster upgrade` sets while the node waits its turn (docs/CLUSTER.md).
  r = Kubectl({"label", "node", "gpu-a", "nvidia.com/gpu-driver-upgrade-state=upgrade-required"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  StartExporter("gpu-a", {"--sim", "dgx-h100"});

  // gpu-b: an A100 node in MIG mode (mixed), after the MIG manager applied its layout.
  AddNode("gpu-b", {{"nvidia.com/mig-1g.10gb", "7"},
                    {"nvidia.com/mig-2g.20gb", "3"},
                    {"nvidia.com/mig-3g.40gb", "2"}});
  r = Gpunode({"--sim", "a100-mig", "labels", "--write", "node", "--node-name", "gpu-b",
               "--oneshot", "--mig-strategy", "mixed"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // What `gpunode mig manager` and the upgrade leave on a node they finished with.
  r = Kubectl({"label", "node", "gpu-b", "nvidia.com/mig.config=custom",
               "nvidia.com/mig.config.state=success",
               "nvidia.com/gpu-driver-upgrade-state=upgrade-done"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  StartExporter("gpu-b", {"--sim", "a100-mig"});

  // gpu-c: two A10s, one fallen off the bus after XIDs; drained for repair by gpunode.
  AddNode("gpu-c", {{"nvidia.com/gpu", "1"}});
  r = Gpunode({"--sim", kFixtures + "/metrics/xid-lost.yaml", "labels", "--write", "node",
               "--node-name", "gpu-c", "--oneshot"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Gpunode({"cluster", "drain", "gpu-c", "--cordon"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  StartExporter("gpu-c", {"--sim", kFixtures + "/metrics/xid-lost.yaml"});

  // gpu-d: four A10s whose compute processes belong to no pod the kubelet knows (zombies).
  AddNode("gpu-d", {{"nvidia.com/gpu", "4"}});
  r = Gpunode({"--sim", kFixtures + "/metrics/zombie-node.yaml", "labels", "--write", "node",
               "--node-name", "gpu-d", "--oneshot"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::copy(kFixtures + "/metrics/host", dir_.path() + "/host", fs::copy_options::recursive);
  kubelet_ = std::make_unique<testing::KubeletPodResourcesDouble>(
      dir_.path() + "/host/var/lib/kubelet/pod-resources/kubelet.sock");
  StartExporter(
      "gpu-d",
      {"--sim", kFixtures + "/metrics/zombie-node.yaml", "--host-root", dir_.path() + "/host"},
      /*attribution=*/true);

  int ksm_port = testing::FreeLoopbackPort(), ksm_telemetry_port = testing::FreeLoopbackPort();
  kube_state_metrics_process_ =
      std::make_unique<testing::BackgroundProcess>(std::vector<std::string>{
          kube_state_metrics_, "--kubeconfig=" + cluster_->admin_kubeconfig(), "--resources=nodes",
          "--host=127.0.0.1", "--port=" + std::to_string(ksm_port), "--telemetry-host=127.0.0.1",
          "--telemetry-port=" + std::to_string(ksm_telemetry_port),
          std::string("--metric-labels-allowlist=") + kNodeLabelsAllowlist});

  std::string targets;
  for (int port : exporter_ports_) targets += "'127.0.0.1:" + std::to_string(port) + "',";
  prometheus_port_ = testing::FreeLoopbackPort();
  testing::WriteText(dir_.path() + "/prometheus.yml",
                     "global:\n"
                     "  scrape_interval: 1s\n"
                     "scrape_configs:\n"
                     "  - job_name: gpunode-exporter\n"
                     "    honor_labels: true\n"
                     "    static_configs:\n"
                     "      - targets: [" +
                         targets +
                         "]\n"
                         "  - job_name: kube-state-metrics\n"
                         "    honor_labels: true\n"
                         "    static_configs:\n"
                         "      - targets: ['127.0.0.1:" +
                         std::to_string(ksm_port) + "']\n");
  prometheus_ = std::make_unique<testing::BackgroundProcess>(std::vector<std::string>{
      PROMETHEUS, "--config.file=" + dir_.path() + "/prometheus.yml",
      "--storage.tsdb.path=" + dir_.path() + "/data",
      "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_)});
  ASSERT_EQ(AwaitSeries("up == 1", 5).size(), 5u)
      << Query("up").dump() << "\nkube-state-metrics: " << kube_state_metrics_process_->Stderr()
      << "\nprometheus: " << prometheus_->Stderr();

  // The node variable offers the four nodes.
  testing::HttpResult nodes = testing::HttpGet(
      prometheus_port_, "/api/v1/label/Hostname/values?match[]=gpunode_physical_gpus");
  EXPECT_EQ(json::parse(nodes.body)["data"], json({"gpu-a", "gpu-b", "gpu-c", "gpu-d"}));

  std::ifstream in(kSource + "/deploy/exporter/fleet-dashboard.json");
  json dashboard = json::parse(in);
  std::map<std::string, json> answers;  // by panel title and refId
  std::map<std::string, std::string> exprs;
  int queries = 0;
  for (const json& panel : dashboard["panels"]) {
    for (const json& target : panel["targets"]) {
      std::string expr = AsGrafanaSends(target["expr"].get<std::string>());
      json result = AwaitSeries(expr);
      EXPECT_FALSE(result.empty())
          << "panel \"" << panel["title"].get<std::string>() << "\": no series for " << expr;
      std::string key =
          panel["title"].get<std::string>() + "/" + target["refId"].get<std::string>();
      answers[key] = result;
      exprs[key] = expr;
      ++queries;
    }
  }
  EXPECT_EQ(queries, 19);

  // The table's numbers are each node's own.
  const json& physical = answers["GPU nodes/A"];
  EXPECT_EQ(ValueOf(physical, {{"Hostname", "gpu-a"}}), "8");
  EXPECT_EQ(ValueOf(physical, {{"Hostname", "gpu-c"}}), "2");
  // gpu-c's second A10 falls off the bus 600 ms after its exporter starts.
  json healthy = AwaitSeries(exprs["GPU nodes/B"] + " == 1");
  EXPECT_EQ(ValueOf(healthy, {{"Hostname", "gpu-c"}}), "1");
  EXPECT_EQ(ValueOf(answers["GPU nodes/B"], {{"Hostname", "gpu-a"}}), "8");
  const json& allocatable = answers["GPU nodes/C"];
  EXPECT_EQ(ValueOf(allocatable, {{"Hostname", "gpu-a"}}), "32");
  EXPECT_EQ(ValueOf(allocatable, {{"Hostname", "gpu-b"}}), "12");
  const json& cordoned = answers["GPU nodes/D"];
  EXPECT_EQ(ValueOf(cordoned, {{"Hostname", "gpu-c"}}), "1");
  EXPECT_EQ(ValueOf(cordoned, {{"Hostname", "gpu-a"}}), "0");
  const json& labels = answers["GPU nodes/E"];
  EXPECT_EQ(ValueOf(labels, {{"Hostname", "gpu-a"},
                             {"label_nvidia_com_gpu_driver_upgrade_state", "upgrade-required"},
                             {"label_nvidia_com_gpu_replicas", "4"},
                             {"label_nvidia_com_gpu_sharing_strategy", "time-slicing"},
                             {"label_nvidia_com_gpu_product", "NVIDIA-H100-80GB-HBM3-SHARED"}}),
            "1");
  EXPECT_EQ(ValueOf(labels, {{"Hostname", "gpu-c"}, {"label_nvidia_com_gpu_state", "draining"}}),
            "1");
  EXPECT_EQ(
      ValueOf(labels, {{"Hostname", "gpu-b"}, {"label_nvidia_com_mig_config_state", "success"}}),
      "1");
  EXPECT_EQ(ValueOf(answers["GPU nodes/F"], {{"Hostname", "gpu-d"}}), "4");
  EXPECT_EQ(ValueOf(answers["Nodes short of GPUs/A"], {}), "1") << "gpu-c";
  const json& xids = answers["XIDs by node and code/A"];
  EXPECT_EQ(ValueOf(xids, {{"Hostname", "gpu-c"}, {"gpu", "1"}, {"xid", "79"}}), "1");
  EXPECT_EQ(ValueOf(xids, {{"Hostname", "gpu-c"}, {"gpu", "0"}, {"xid", "43"}}), "2");
  EXPECT_EQ(ValueOf(answers["Draining nodes/A"], {{"node", "gpu-c"}}), "1");
  EXPECT_EQ(ValueOf(answers["Driver upgrade states/A"],
                    {{"label_nvidia_com_gpu_driver_upgrade_state", "upgrade-done"}}),
            "1");
  EXPECT_EQ(ValueOf(answers["MIG layout/A"],
                    {{"Hostname", "gpu-b"}, {"gpu", "0"}, {"GPU_I_PROFILE", "1g.10gb"}}),
            "7");
  EXPECT_EQ(ValueOf(answers["Sharing/A"], {{"Hostname", "gpu-a"}}), "4") << "devices per GPU";

  for (auto& exporter : exporters_) EXPECT_EQ(exporter->Stop(SIGTERM), 0);
  kube_state_metrics_process_->Stop(SIGTERM);
  prometheus_->Stop(SIGTERM);
}

}  // namespace
}  // namespace gpunode
