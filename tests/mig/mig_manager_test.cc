// `gpunode mig manager` as the GPU Operator runs its mig-manager: the real binary on the
// simulator (GPUNODE_SIM_STATE carries the GPUs to the `mig assert` runs that check them) and the
// API server double, whose node label picks the layout. The test plays the DaemonSet controller:
// when the manager pauses a client's label, the test deletes that client's pod, and puts it back
// once the label says "true" again. Every wait is for a request to the double, never a sleep.
#include "mig/mig_manager.h"

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "build_paths.h"
#include "core/env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "harness/simulated_env.h"
#include "nlohmann/json.hpp"
#include "nvml/library.h"
#include "process.h"
#include "temp_dir.h"
#include "test_support.h"
#include "yaml-cpp/yaml.h"

namespace gpunode {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kWait{30000};
constexpr const char* kNode = "gpu-a";
constexpr const char* kPluginLabel = "nvidia.com/gpu.deploy.device-plugin";
constexpr const char* kExporterLabel = "nvidia.com/gpu.deploy.dcgm-exporter";
constexpr const char* kState = "nvidia.com/mig.config.state";
const std::string kSpec = std::string(build_paths::kMigFixtures) + "/a100-h100.yaml";
const std::string kDeploy = std::string(build_paths::kSourceDir) + "/deploy";

using Verbs = std::map<std::string, std::set<std::string>>;  // by resource

// The verbs of the ClusterRole in `path`.
Verbs RoleVerbs(const std::string& path) {
  Verbs verbs;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(path)) {
    if (doc["kind"].as<std::string>() != "ClusterRole") continue;
    for (const YAML::Node& rule : doc["rules"]) {
      for (const YAML::Node& resource : rule["resources"]) {
        for (const YAML::Node& verb : rule["verbs"]) {
          verbs[resource.as<std::string>()].insert(verb.as<std::string>());
        }
      }
    }
  }
  return verbs;
}

// GPU 0 is an A100 80GB, GPU 1 an H100 80GB.
constexpr const char* kConfig = R"(version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  a100-3g:
    - devices: [0]
      mig-enabled: true
      mig-devices: {"3g.40gb": 2}
  a100-balanced:
    - devices: [0]
      mig-enabled: true
      mig-devices: {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
  too-many:
    - devices: [0]
      mig-enabled: true
      mig-devices: {"3g.40gb": 3}
  h200-1g:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.18gb": 7}
)";

json Pod(const std::string& name, const std::string& app, const std::string& node) {
  return {{"kind", "Pod"},
          {"apiVersion", "v1"},
          {"metadata",
           {{"name", name},
            {"namespace", "gpunode-system"},
            {"labels", {{"app.kubernetes.io/name", app}}}}},
          {"spec", {{"nodeName", node}}},
          {"status", {{"phase", "Running"}}}};
}

class MigManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = dir_.Write("config.yaml", kConfig);
    state_ = dir_.path() + "/state";
    testing::ApiServerDouble::Options plain_http;
    plain_http.token = "";
    api_ = std::make_unique<testing::ApiServerDouble>(plain_http);
    api_->OnRequest([this](const testing::ApiServerDouble::Request& r) {
      if (r.method != "PATCH") return;
      std::lock_guard lock(mu_);
      patches_.push_back(json::parse(r.body, nullptr, false));
      patched_.notify_all();
    });
    ASSERT_TRUE(api_->Start());
    kubeconfig_ = dir_.Write("kubeconfig", api_->PlainKubeconfig());
    // The clients on this node, a client on another node, and a workload here.
    ClientsBack();
    api_->AddObject(Pod("device-plugin-b", "gpunode-device-plugin", "gpu-b"));
    api_->AddObject(Pod("train-0", "trainer", kNode));
  }
  void TearDown() override {
    manager_.reset();
    api_.reset();
  }

  // Node gpu-a with label nvidia.com/mig.config=`config`, as `kubectl label` makes it.
  void Label(const std::string& config, json labels = json::object()) {
    json node = api_->Node(kNode).value_or(
        json{{"kind", "Node"}, {"apiVersion", "v1"}, {"metadata", {{"name", kNode}}}});
    if (labels.empty()) labels = node["metadata"].value("labels", json::object());
    labels["nvidia.com/mig.config"] = config;
    node["metadata"]["labels"] = labels;
    api_->AddObject(node);
  }

  void ClientsBack() {
    api_->AddObject(Pod("device-plugin-a", "gpunode-device-plugin", kNode));
    api_->AddObject(Pod("exporter-a", "gpunode-exporter", kNode));
  }
  void ClientsGone() {
    api_->DeletePod("gpunode-system", "device-plugin-a");
    api_->DeletePod("gpunode-system", "exporter-a");
  }

  void Start(std::vector<std::string> more = {}) {
    std::vector<std::string> argv = {build_paths::kBinary,
                                     "--sim",
                                     spec_,
                                     "--log-level",
                                     "info",
                                     "mig",
                                     "manager",
                                     "-f",
                                     config_};
    argv.insert(argv.end(), more.begin(), more.end());
    manager_ = std::make_unique<testing::BackgroundProcess>(
        argv, testing::BackgroundProcess::Options{
                  .extra_env = {"NODE_NAME=" + std::string(kNode), "KUBECONFIG=" + kubeconfig_,
                                "GPUNODE_SIM_STATE=" + state_},
                  .stderr_path = dir_.path() + "/manager.log"});
  }

  // Waits for the next node patch (from patch `*from` on) that sets `key` to `value`. The double
  // calls the hook before it applies the patch: what a patch set is read from the patch, and a
  // node read is only sure to show the patches before the last one awaited.
  bool AwaitPatch(const std::string& key, const std::string& value, size_t* from) {
    std::unique_lock lock(mu_);
    return patched_.wait_for(lock, kWait, [&] {
      for (; *from < patches_.size(); ++*from) {
        const json& labels = patches_[*from]["metadata"]["labels"];
        if (labels.contains(key) && labels[key] == value) {
          ++*from;
          return true;
        }
      }
      return false;
    });
  }

  // Whether a patch in [from, to) paused a client.
  bool PausedIn(size_t from, size_t to) {
    std::lock_guard lock(mu_);
    for (size_t i = from; i < to && i < patches_.size(); ++i) {
      for (const auto& [key, value] : patches_[i]["metadata"]["labels"].items()) {
        if (value == "paused-for-mig-change") return true;
      }
    }
    return false;
  }

  std::string NodeLabel(const std::string& key) {
    json labels = api_->Node(kNode).value()["metadata"]["labels"];
    return labels.contains(key) ? labels[key].get<std::string>() : "(unset)";
  }

  // The RBAC verbs the requests the double received need.
  Verbs UsedVerbs() const {
    Verbs used;
    for (const testing::ApiServerDouble::Request& r : api_->Requests()) {
      std::string rest = r.path.substr(std::string("/api/v1/").size());
      std::string resource = rest.substr(0, rest.find('/'));
      bool named = rest.find('/') != std::string::npos;
      std::string verb = r.method == "PATCH"         ? "patch"
                         : r.query.contains("watch") ? "watch"
                         : named                     ? "get"
                                                     : "list";
      used[resource].insert(verb);
    }
    return used;
  }

  // `mig assert` of layout `config` in a process of its own: 0 when the GPUs have it.
  int Assert(const std::string& config) {
    testing::ProcessResult r = testing::RunProcess(
        {build_paths::kBinary, "--sim", spec_, "mig", "assert", "-f", config_, "--config", config},
        {"GPUNODE_SIM_STATE=" + state_});
    return r.exit_code;
  }

  testing::TempDir dir_{"gpunode-mig-manager"};
  std::string spec_ = kSpec;
  std::string config_, state_, kubeconfig_;
  std::unique_ptr<testing::ApiServerDouble> api_;
  std::unique_ptr<testing::BackgroundProcess> manager_;
  std::mutex mu_;
  std::condition_variable patched_;
  std::vector<json> patches_;
};

TEST_F(MigManagerTest, FlipsLayoutsByLabelWithTheClientsStoppedAndRestarted) {
  Label("a100-3g", {{kPluginLabel, "true"}});  // the exporter's label unset: deployed as well
  Start();
  size_t at = 0;
  ASSERT_TRUE(AwaitPatch(kState, "pending", &at)) << manager_->Log();
  size_t exporter = at;
  ASSERT_TRUE(AwaitPatch(kPluginLabel, "paused-for-mig-change", &at)) << manager_->Log();
  EXPECT_TRUE(AwaitPatch(kExporterLabel, "paused-for-mig-change", &exporter));
  // Nothing changes while the clients run.
  EXPECT_EQ(Assert("all-disabled"), 0);
  ClientsGone();
  ASSERT_TRUE(AwaitPatch(kState, "success", &at)) << manager_->Log();
  EXPECT_EQ(Assert("a100-3g"), 0);
  EXPECT_EQ(NodeLabel(kPluginLabel), "true");
  EXPECT_EQ(NodeLabel(kExporterLabel), "true");
  // The workload and the other node's client were not waited for, nor touched.
  EXPECT_TRUE(api_->Pod("gpunode-system", "train-0").has_value());
  EXPECT_TRUE(api_->Pod("gpunode-system", "device-plugin-b").has_value());

  // The DaemonSets bring the clients back; then the label names another layout.
  ClientsBack();
  Label("a100-balanced");
  ASSERT_TRUE(AwaitPatch(kState, "pending", &at)) << manager_->Log();
  ASSERT_TRUE(AwaitPatch(kPluginLabel, "paused-for-mig-change", &at)) << manager_->Log();
  EXPECT_EQ(Assert("a100-3g"), 0);
  ClientsGone();
  ASSERT_TRUE(AwaitPatch(kState, "success", &at)) << manager_->Log();
  EXPECT_EQ(Assert("a100-balanced"), 0);
  EXPECT_EQ(NodeLabel(kPluginLabel), "true");

  // A manager started again (a new pod) finds the layout there: success, nothing paused.
  ClientsBack();
  EXPECT_EQ(manager_->Stop(SIGTERM), 0) << manager_->Log();
  const size_t restart = at;
  Start();
  ASSERT_TRUE(AwaitPatch(kState, "pending", &at)) << manager_->Log();
  ASSERT_TRUE(AwaitPatch(kState, "success", &at)) << manager_->Log();
  EXPECT_FALSE(PausedIn(restart, at));
  EXPECT_THAT(manager_->Log(), HasSubstr("has MIG config \"a100-balanced\" already"));
  EXPECT_EQ(manager_->Stop(SIGTERM), 0) << manager_->Log();

  // deploy/mig-manager grants what the manager used, nothing more.
  EXPECT_EQ(UsedVerbs(), RoleVerbs(kDeploy + "/mig-manager/rbac.yaml"));
}

// deploy/ says what the code needs: the layouts of the manager's ConfigMap plan on an A100 and
// H100 node, the manager learns its node from spec.nodeName and reads the mounted file, and the
// client DaemonSets keep off a node whose client label the manager paused.
TEST(MigManagerDeploy, TheManifestsMatchTheManager) {
  testing::TempDir dir("gpunode-mig-deploy");
  YAML::Node config_map = YAML::LoadFile(kDeploy + "/mig-manager/config.yaml");
  std::string config =
      dir.Write("config.yaml", config_map["data"]["config.yaml"].as<std::string>());
  YAML::Node layouts = YAML::Load(config_map["data"]["config.yaml"].as<std::string>());
  ASSERT_GE(layouts["mig-configs"].size(), 3u);
  for (const auto& layout : layouts["mig-configs"]) {
    std::string name = layout.first.as<std::string>();
    testing::ProcessResult r =
        testing::RunProcess({build_paths::kBinary, "--sim", kSpec, "mig", "apply", "-f", config,
                             "--config", name, "--dry-run"},
                            {"GPUNODE_SIM_STATE=" + dir.path() + "/state"});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
  }

  YAML::Node manager = YAML::LoadFile(kDeploy + "/mig-manager/daemonset.yaml");
  YAML::Node pod = manager["spec"]["template"]["spec"];
  YAML::Node container = pod["containers"][0];
  std::vector<std::string> args = container["args"].as<std::vector<std::string>>();
  EXPECT_THAT(args,
              ::testing::ElementsAre("mig", "manager", "--config-file=/mig-config/config.yaml"));
  EXPECT_EQ(container["volumeMounts"][0]["mountPath"].as<std::string>(), "/mig-config");
  EXPECT_EQ(pod["volumes"][0]["configMap"]["name"].as<std::string>(),
            config_map["metadata"]["name"].as<std::string>());
  std::map<std::string, YAML::Node> env;
  for (const YAML::Node& e : container["env"]) env[e["name"].as<std::string>()] = e;
  EXPECT_EQ(env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>(),
            "spec.nodeName");

  // Every node selector term of each client keeps off the paused value of its label.
  auto keeps_off_paused = [](const YAML::Node& daemonset, const std::string& label) {
    YAML::Node terms =
        daemonset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                 ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    if (!terms || terms.size() == 0) return false;
    for (const YAML::Node& term : terms) {
      bool excluded = false;
      for (const YAML::Node& e : term["matchExpressions"]) {
        if (e["key"].as<std::string>() != label || e["operator"].as<std::string>() != "NotIn")
          continue;
        for (const YAML::Node& v : e["values"])
          excluded |= v.as<std::string>() == "paused-for-mig-change";
      }
      if (!excluded) return false;
    }
    return true;
  };
  YAML::Node plugin = YAML::LoadFile(kDeploy + "/device-plugin/base/daemonset.yaml");
  EXPECT_TRUE(keeps_off_paused(plugin, kPluginLabel));
  for (const YAML::Node& doc : YAML::LoadAllFromFile(kDeploy + "/exporter/daemonset.yaml")) {
    if (doc["kind"].as<std::string>() == "DaemonSet") {
      EXPECT_TRUE(keeps_off_paused(doc, kExporterLabel));
    }
  }
}

// With MIG off NVML lists no profiles, so a layout that does not fit shows only once MIG is on:
// then it is rolled back, with the clients paused meanwhile. With MIG on it is refused before
// anything is paused.
TEST_F(MigManagerTest, ALayoutThatCannotBeMadeFailsAndTheNodeKeepsItsLayout) {
  Label("too-many", {{kPluginLabel, "true"}});
  Start();
  size_t at = 0;
  ASSERT_TRUE(AwaitPatch(kPluginLabel, "paused-for-mig-change", &at)) << manager_->Log();
  ClientsGone();
  ASSERT_TRUE(AwaitPatch(kState, "failed", &at)) << manager_->Log();
  EXPECT_EQ(NodeLabel(kPluginLabel), "true");
  EXPECT_EQ(Assert("all-disabled"), 0);
  EXPECT_THAT(manager_->Log(), HasSubstr("3x 3g.40gb do not fit"));
  EXPECT_THAT(manager_->Log(), HasSubstr("rolled back"));

  ClientsBack();
  Label("a100-3g");
  ASSERT_TRUE(AwaitPatch(kPluginLabel, "paused-for-mig-change", &at)) << manager_->Log();
  ClientsGone();
  ASSERT_TRUE(AwaitPatch(kState, "success", &at)) << manager_->Log();
  ClientsBack();

  size_t before = at;
  Label("too-many");
  ASSERT_TRUE(AwaitPatch(kState, "failed", &at)) << manager_->Log();
  EXPECT_FALSE(PausedIn(before, at));
  EXPECT_EQ(Assert("a100-3g"), 0);

  before = at;
  Label("no-such-layout");
  ASSERT_TRUE(AwaitPatch(kState, "failed", &at)) << manager_->Log();
  EXPECT_FALSE(PausedIn(before, at));
  EXPECT_THAT(manager_->Log(), HasSubstr("no-such-layout"));
  EXPECT_EQ(Assert("a100-3g"), 0);
  EXPECT_EQ(manager_->Stop(SIGTERM), 0) << manager_->Log();
}

// On the H200 node process 2210 holds GPU 0. The clients are paused first (a GPU client may be
// what holds a GPU), then the busy GPU is refused with its pid; forced, the mode change waits for
// a GPU reset, which fails the change and says what to do. The clients are resumed each time.
TEST_F(MigManagerTest, ABusyGpuIsRefusedAndAForcedModeChangeThatNeedsAResetFails) {
  spec_ = "h200-1";
  Label("h200-1g", {{kPluginLabel, "true"}});
  Start();
  size_t at = 0;
  ASSERT_TRUE(AwaitPatch(kPluginLabel, "paused-for-mig-change", &at)) << manager_->Log();
  ClientsGone();
  ASSERT_TRUE(AwaitPatch(kState, "failed", &at)) << manager_->Log();
  EXPECT_THAT(manager_->Log(), HasSubstr("GPU 0 (NVIDIA H200) is used by pid 2210"));
  EXPECT_EQ(NodeLabel(kPluginLabel), "true");
  EXPECT_EQ(manager_->Stop(SIGTERM), 0) << manager_->Log();

  Start({"--force"});
  ASSERT_TRUE(AwaitPatch(kPluginLabel, "paused-for-mig-change", &at)) << manager_->Log();
  ClientsGone();
  ASSERT_TRUE(AwaitPatch(kState, "failed", &at)) << manager_->Log();
  EXPECT_THAT(manager_->Log(), HasSubstr("MIG mode enable is pending"));
  EXPECT_THAT(manager_->Log(), HasSubstr("nvidia-smi -r -i 0"));
  EXPECT_EQ(NodeLabel(kPluginLabel), "true");
  EXPECT_EQ(manager_->Stop(SIGTERM), 0) << manager_->Log();
}

// SIGTERM while the clients are awaited (a pod deleted mid-change) ends the wait: the clients
// are resumed, the change failed, the GPUs untouched, and the process exits 0 well before the
// 20 s after which Stop kills it.
TEST_F(MigManagerTest, SigtermWhileTheClientsAreAwaitedResumesThemAndStops) {
  Label("a100-3g", {{kPluginLabel, "true"}});
  Start();
  size_t at = 0;
  ASSERT_TRUE(AwaitPatch(kPluginLabel, "paused-for-mig-change", &at)) << manager_->Log();
  EXPECT_EQ(manager_->Stop(SIGTERM), 0) << manager_->Log();
  EXPECT_EQ(NodeLabel(kPluginLabel), "true");
  EXPECT_EQ(NodeLabel(kExporterLabel), "true");
  EXPECT_EQ(NodeLabel(kState), "failed");
  EXPECT_EQ(Assert("all-disabled"), 0);
  EXPECT_THAT(manager_->Log(), HasSubstr("stopped while waiting for the GPU client pods"));
}

// The manager's waits on a simulated clock (core::Env), in this process: the clients' timeout and
// a stop while they are awaited cost the test no real time.
class MigManagerWaitTest : public MigManagerTest {
 protected:
  void SetUp() override {
    MigManagerTest::SetUp();
    Label("a100-3g", {{kPluginLabel, "true"}});
    setenv("GPUNODE_SIM", spec_.c_str(), 1);
    setenv("GPUNODE_SIM_STATE", state_.c_str(), 1);
    absl::StatusOr<std::unique_ptr<nvml::Library>> library =
        nvml::Library::Open({.library_path = build_paths::kSimLibrary});
    ASSERT_TRUE(library.ok()) << library.status();
    library_ = *std::move(library);
    client_ = testing::ClientFor(*api_, env_);
    ASSERT_NE(client_, nullptr);
  }
  void TearDown() override {
    // Before the double stops, which would otherwise wait out the client's kept-alive connection.
    client_.reset();
    unsetenv("GPUNODE_SIM");
    unsetenv("GPUNODE_SIM_STATE");
    MigManagerTest::TearDown();
  }

  absl::Status Reconcile(const std::string& layout) {
    mig::MigManager manager(*library_, *client_,
                            {.node = kNode,
                             .config_file = config_,
                             .client_labels = {kPluginLabel, kExporterLabel},
                             .client_selectors = {"app.kubernetes.io/name=gpunode-device-plugin",
                                                  "app.kubernetes.io/name=gpunode-exporter"},
                             .client_timeout = absl::Minutes(1)},
                            env_);
    return manager.Reconcile(layout);
  }

  testing::SimulatedEnv env_;
  std::unique_ptr<nvml::Library> library_;
  std::unique_ptr<kube::Client> client_;
};

// The clients never go (their DaemonSets ignore the paused label): after the timeout (a minute,
// polled every second: 60 simulated seconds, 120 real pod lists) the change fails, the GPUs are
// untouched and the clients resumed.
TEST_F(MigManagerWaitTest, ClientsThatDoNotGoFailTheChangeAndAreResumed) {
  const absl::Time start = env_.Now();
  absl::Status st = Reconcile("a100-3g");
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_THAT(st.message(), HasSubstr("GPU client pods still on node gpu-a after 1m: "
                                      "gpunode-system/device-plugin-a, gpunode-system/exporter-a"));
  EXPECT_GE(env_.Now() - start, absl::Minutes(1));
  EXPECT_LT(env_.Now() - start, absl::Minutes(1) + absl::Seconds(2)) << "polled every second";
  EXPECT_EQ(NodeLabel(kPluginLabel), "true");
  EXPECT_EQ(NodeLabel(kExporterLabel), "true");
  EXPECT_EQ(NodeLabel(kState), "failed");
  EXPECT_EQ(Assert("all-disabled"), 0);
}

// A stop (SIGTERM) half a minute into the wait ends it at once: the clients are resumed.
TEST_F(MigManagerWaitTest, AStopWhileTheClientsAreAwaitedEndsTheWait) {
  const absl::Time start = env_.Now();
  env_.OnSleep([&](absl::Time now) {
    if (now - start >= absl::Seconds(30)) env_.RequestStop(SIGTERM);
  });
  absl::Status st = Reconcile("a100-3g");
  EXPECT_EQ(st.code(), absl::StatusCode::kCancelled) << st;
  EXPECT_THAT(st.message(), HasSubstr("stopped while waiting for the GPU client pods"));
  EXPECT_EQ(env_.Now() - start, absl::Seconds(30));
  EXPECT_EQ(NodeLabel(kPluginLabel), "true");
  EXPECT_EQ(NodeLabel(kState), "failed");
  EXPECT_EQ(Assert("all-disabled"), 0);
}

TEST(MigManagerFlags, BadInputIsRefusedAtStartWithOneLine) {
  testing::TempDir dir("gpunode-mig-manager-flags");
  std::string config = dir.Write("config.yaml", kConfig);
  testing::ProcessResult r = testing::RunProcess(
      {build_paths::kBinary, "--sim", kSpec, "mig", "manager", "-f", config}, {"NODE_NAME="});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("set --node or NODE_NAME"));
  r = testing::RunProcess({build_paths::kBinary, "--sim", kSpec, "mig", "manager", "-f",
                           dir.Write("bad.yaml", "version: v2\n"), "--node", "gpu-a"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.yaml"));
  r = testing::RunProcess({build_paths::kBinary, "--sim", kSpec, "mig", "manager", "-f", config,
                           "--node", "gpu-a", "--client-timeout", "soon"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--client-timeout"));
  for (const std::string& err : {r.err}) {
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
}

}  // namespace
}  // namespace gpunode
