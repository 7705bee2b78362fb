// The config a node runs, picked by its label nvidia.com/device-plugin.config from a directory of
// configs (a ConfigMap mounted whole) and followed live: the real binary against the kubelet
// double and the API server double, which streams the node's changes as a watch. Every wait is
// for an event (a registration, a ListAndWatch update, a log line, a request), never a fixed
// sleep.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "kubelet_double.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "yaml-cpp/yaml.h"

namespace gpunode {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;
namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr milliseconds kWait{15000};  // generous for sanitizer builds; events end waits early
constexpr const char* kResource = "nvidia.com/gpu";
constexpr const char* kLabel = "nvidia.com/device-plugin.config";

testing::DevicePredicate Healthy(size_t count) {
  return [count](const std::vector<testing::DeviceState>& devices) {
    return devices.size() == count && std::all_of(devices.begin(), devices.end(),
                                                  [](auto& d) { return d.health == "Healthy"; });
  };
}

class ConfigLabelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpunode-cl-XXXXXX";  // unix socket paths must stay short
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    dir_ = root_ + "/device-plugins";
    ASSERT_TRUE(fs::create_directory(dir_));
    kubelet_ = std::make_unique<testing::KubeletDouble>(dir_);
    ASSERT_TRUE(kubelet_->Start());
    testing::ApiServerDouble::Options plain_http;
    plain_http.token = "";
    api_ = std::make_unique<testing::ApiServerDouble>(plain_http);
    api_->OnRequest([this](const testing::ApiServerDouble::Request& r) {
      if (r.method != "POST" || r.path != "/api/v1/namespaces/default/events") return;
      std::lock_guard lock(mu_);
      events_.push_back(json::parse(r.body, nullptr, false));
      posted_.notify_all();
    });
    ASSERT_TRUE(api_->Start());
    kubeconfig_ = root_ + "/kubeconfig";
    std::ofstream(kubeconfig_) << api_->PlainKubeconfig();
    // The three configs of the node pools: whole GPUs, time-slicing by 4, MPS by 2.
    configs_ = root_ + "/configs";
    fs::create_directories(configs_);
    std::ofstream(configs_ + "/none") << "version: v1\n";
    std::ofstream(configs_ + "/ts4") << "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                                     << "    - {name: nvidia.com/gpu, replicas: 4}\n";
    std::ofstream(configs_ + "/mps2") << "version: v1\nsharing:\n  mps:\n    resources:\n"
                                      << "    - {name: nvidia.com/gpu, replicas: 2}\n";
  }
  void TearDown() override {
    plugin_.reset();
    kubelet_.reset();
    api_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // Node gpu-a, with the config label when `config` is not empty: a new version of the node, as
  // `kubectl label` makes one.
  void Label(const std::string& config) {
    json node = {
        {"kind", "Node"},
        {"apiVersion", "v1"},
        {"metadata", {{"name", "gpu-a"}, {"labels", {{"kubernetes.io/hostname", "gpu-a"}}}}}};
    if (!config.empty()) node["metadata"]["labels"][kLabel] = config;
    api_->AddObject(node);
  }

  void Start() {
    plugin_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{build_paths::kBinary, "--sim", "a10-pcie-4", "--log-level", "info",
                                 "device-plugin", "--kubelet-dir", dir_, "--cdi-spec-dir", dir_,
                                 "--config-file", configs_, "--default-config", "none",
                                 "--mps-root", root_ + "/mps"},
        testing::BackgroundProcess::Options{
            .extra_env = {"NODE_NAME=gpu-a", "KUBECONFIG=" + kubeconfig_},
            .stderr_path = root_ + "/plugin.log"});
  }

  void Registered(int count) {
    EXPECT_TRUE(kubelet_->WaitForRegistration(kResource, count, kWait).has_value())
        << "registration " << count << " did not come; log:\n"
        << plugin_->Log();
  }

  // The next ListAndWatch update, from update `*from` on, that satisfies `predicate`.
  void Await(const testing::DevicePredicate& predicate, size_t* from) {
    auto update = kubelet_->WaitForDevices(kResource, predicate, kWait, *from);
    ASSERT_TRUE(update.has_value()) << "no such update; log:\n" << plugin_->Log();
    *from = update->first + 1;
  }

  // The first node event posted, as the API server received it; null when none comes.
  json FirstEvent() {
    std::unique_lock lock(mu_);
    posted_.wait_for(lock, kWait, [this] { return !events_.empty(); });
    return events_.empty() ? json() : events_.front();
  }

  std::string root_, dir_, kubeconfig_, configs_;
  std::unique_ptr<testing::KubeletDouble> kubelet_;
  std::unique_ptr<testing::ApiServerDouble> api_;
  std::unique_ptr<testing::BackgroundProcess> plugin_;
  std::mutex mu_;
  std::condition_variable posted_;
  std::vector<json> events_;  // the bodies of event POSTs, in order
};

TEST_F(ConfigLabelTest, FollowsTheNodeLabelAcrossThreeConfigsAndKeepsCapacityOnABadKey) {
  Label("");
  Start();
  Registered(1);
  size_t update = 0;
  Await(Healthy(4), &update);  // no label: the default, whole GPUs
  EXPECT_THAT(plugin_->Log(), HasSubstr("node gpu-a: following label " + std::string(kLabel)));

  auto labelled = std::chrono::steady_clock::now();
  Label("ts4");
  Registered(2);
  EXPECT_LT(std::chrono::steady_clock::now() - labelled, std::chrono::seconds(2));
  Await(Healthy(16), &update);
  EXPECT_THAT(plugin_->Log(), HasSubstr(configs_ + "/ts4, node label " + kLabel + "=ts4"));

  // MPS: replicas only once a control daemon answers, which none does here.
  Label("mps2");
  Registered(3);
  Await(Healthy(0), &update);
  EXPECT_THAT(plugin_->Log(), HasSubstr(configs_ + "/mps2, node label " + kLabel + "=mps2"));

  // A key the ConfigMap lacks: the running config stays, the log and a node event say why.
  Label("mps4");
  json event = FirstEvent();
  ASSERT_TRUE(event.is_object()) << plugin_->Log();
  EXPECT_EQ(event["involvedObject"]["kind"], "Node");
  EXPECT_EQ(event["involvedObject"]["name"], "gpu-a");
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["reason"], "DevicePluginConfigRefused");
  EXPECT_THAT(event["message"].get<std::string>(),
              HasSubstr(std::string(kLabel) + "=mps4: no such config in " + configs_ +
                        " (configs: mps2, none, ts4)"));
  EXPECT_THAT(event["message"].get<std::string>(), HasSubstr("the running config stays"));
  EXPECT_THAT(plugin_->Log(), HasSubstr("but is not applied, keeping the running configuration"));
  EXPECT_EQ(kubelet_->RegistrationCount(kResource), 3);

  // The watch and the event went through the small HTTP/1.1 transport: libcurl (and what it
  // brings) never entered the process.
  std::ifstream maps_file("/proc/" + std::to_string(plugin_->pid()) + "/maps");
  std::string maps((std::istreambuf_iterator<char>(maps_file)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(maps.empty());
  EXPECT_THAT(maps, Not(HasSubstr("libcurl")));

  // The label removed: back to the default.
  Label("");
  Registered(4);
  Await(Healthy(4), &update);

  // SIGTERM ends the watch in flight too: a clean exit, promptly.
  auto stopping = std::chrono::steady_clock::now();
  EXPECT_EQ(plugin_->Stop(SIGTERM), 0) << plugin_->Log();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, std::chrono::seconds(3));

  // Only what RBAC get and watch on nodes (and create on events) allow.
  for (const testing::ApiServerDouble::Request& r : api_->Requests()) {
    auto query = [&](const std::string& key) {
      auto it = r.query.find(key);
      return it == r.query.end() ? std::string() : it->second;
    };
    bool node_get = r.method == "GET" && r.path == "/api/v1/nodes/gpu-a";
    bool node_watch = r.method == "GET" && r.path == "/api/v1/nodes" && query("watch") == "true" &&
                      query("fieldSelector") == "metadata.name=gpu-a";
    bool event_post = r.method == "POST" && r.path == "/api/v1/namespaces/default/events";
    EXPECT_TRUE(node_get || node_watch || event_post) << r.method << " " << r.path;
  }
}

TEST_F(ConfigLabelTest, ALabelNamingNoConfigAtStartRunsTheDefaultInsteadOfCrashing) {
  Label("gone");
  Start();
  Registered(1);
  size_t update = 0;
  Await(Healthy(4), &update);
  EXPECT_THAT(plugin_->Log(), HasSubstr("starting with the default config"));
  json event = FirstEvent();
  ASSERT_TRUE(event.is_object()) << plugin_->Log();
  EXPECT_THAT(event["message"].get<std::string>(), HasSubstr("=gone: no such config in"));
  EXPECT_THAT(event["message"].get<std::string>(),
              HasSubstr("add the key to the ConfigMap; starting with the default config instead"));
  // Fixed by the operator: applied as a change.
  Label("ts4");
  Registered(2);
  Await(Healthy(16), &update);
}

// The labeller follows the same label: time-slicing's labels appear when the node is moved to
// ts4, and a bad key keeps the labels it has.
TEST_F(ConfigLabelTest, TheLabellerRelabelsWhenTheNodeLabelChanges) {
  Label("");
  std::string features = root_ + "/features";
  plugin_ = std::make_unique<testing::BackgroundProcess>(
      std::vector<std::string>{build_paths::kBinary, "--sim", "a10-pcie-4", "--log-level", "info",
                               "labels", "--config-file", configs_, "--output", features,
                               "--no-timestamp", "--interval", "1h"},
      testing::BackgroundProcess::Options{
          .extra_env = {"NODE_NAME=gpu-a", "KUBECONFIG=" + kubeconfig_, "CONFIG_DEFAULT=none"},
          .stderr_path = root_ + "/labels.log"});
  ASSERT_TRUE(plugin_->WaitForLog("labels written to " + features, kWait)) << plugin_->Log();
  auto read = [&] {
    std::ifstream in(features);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_THAT(read(), HasSubstr("nvidia.com/gpu.sharing-strategy=none\n"));

  Label("ts4");
  ASSERT_TRUE(plugin_->WaitForLog("relabelled with the config it selects", kWait))
      << plugin_->Log();
  std::string relabelled = read();
  EXPECT_THAT(relabelled, HasSubstr("nvidia.com/gpu.sharing-strategy=time-slicing\n"));
  EXPECT_THAT(relabelled, HasSubstr("nvidia.com/gpu.replicas=4\n"));

  Label("mps4");
  json event = FirstEvent();
  ASSERT_TRUE(event.is_object()) << plugin_->Log();
  EXPECT_THAT(event["message"].get<std::string>(),
              HasSubstr("; the labels of the running config stay"));
  EXPECT_EQ(event["source"]["component"], "gpunode-labels");
  EXPECT_EQ(read(), relabelled);
  EXPECT_EQ(plugin_->Stop(SIGTERM), 0);
  EXPECT_FALSE(fs::exists(features));  // as GFD: no labels outlive the labeller
}

// An API server that cannot be reached does not keep the plugin from serving its default.
TEST_F(ConfigLabelTest, AnUnreachableApiServerLeavesTheDefaultConfig) {
  api_->Stop();
  Start();
  Registered(1);
  size_t update = 0;
  Await(Healthy(4), &update);
  EXPECT_TRUE(plugin_->WaitForLog("cannot follow label " + std::string(kLabel), kWait))
      << plugin_->Log();
}

// deploy/device-plugin/overlays/per-node-config says what the code needs: every config in its
// ConfigMap is valid, the default names one of them, NODE_NAME comes from spec.nodeName, and the
// RBAC is get and watch on nodes and create on events, nothing more.
TEST(PerNodeConfigOverlay, ConfigsAreValidAndTheRbacIsWhatTheWatchNeeds) {
  const std::string overlay =
      std::string(build_paths::kSourceDir) + "/deploy/device-plugin/overlays/per-node-config";
  YAML::Node configs = YAML::LoadFile(overlay + "/configs.yaml");
  std::set<std::string> keys;
  char pattern[] = "/tmp/gpunode-overlay-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  for (const auto& entry : configs["data"]) {
    std::string key = entry.first.as<std::string>();
    keys.insert(key);
    std::string file = std::string(pattern) + "/" + key;
    std::ofstream(file) << entry.second.as<std::string>();
    testing::ProcessResult r =
        testing::RunProcess({build_paths::kBinary, "device-plugin", "--check-config", file});
    EXPECT_EQ(r.exit_code, 0) << key << ": " << r.err;
  }
  fs::remove_all(pattern);
  EXPECT_GE(keys.size(), 2u);

  YAML::Node patch = YAML::LoadFile(overlay + "/daemonset-patch.yaml");
  std::map<std::string, YAML::Node> env;
  for (const YAML::Node& e : patch["spec"]["template"]["spec"]["containers"][0]["env"]) {
    env[e["name"].as<std::string>()] = e;
  }
  EXPECT_EQ(env["CONFIG_FILE"]["value"].as<std::string>(), "/config");
  EXPECT_TRUE(keys.contains(env["CONFIG_DEFAULT"]["value"].as<std::string>()));
  EXPECT_EQ(env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>(),
            "spec.nodeName");

  std::map<std::string, std::set<std::string>> verbs;  // by resource
  for (const YAML::Node& doc : YAML::LoadAllFromFile(overlay + "/rbac.yaml")) {
    if (doc["kind"].as<std::string>() != "ClusterRole") continue;
    for (const YAML::Node& rule : doc["rules"]) {
      for (const YAML::Node& resource : rule["resources"]) {
        for (const YAML::Node& verb : rule["verbs"]) {
          verbs[resource.as<std::string>()].insert(verb.as<std::string>());
        }
      }
    }
  }
  EXPECT_EQ(verbs, (std::map<std::string, std::set<std::string>>{{"nodes", {"get", "watch"}},
                                                                 {"events", {"create"}}}));
}

}  // namespace
}  // namespace gpunode
