// The claims' MPS control daemons as Deployments, against an API answered in this process (the
// real API server, controller-manager and kubelet run them in tests/k8s): the Deployment NVIDIA's
// driver would make, with gpunode's daemon in it; the wait for its `.ready` marker; a stop that
// waits until the daemon has quit; and the clean-up at start.
#include <filesystem>
#include <fstream>
#include <map>

#include "dra/claim_mps.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/simulated_env.h"
#include "nlohmann/json.hpp"
#include "temp_dir.h"

namespace gpunode::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr char kDeployments[] = "/apis/apps/v1/namespaces/gpunode-system/deployments";

// Holds Deployments as the API server does for create (201, 409 when it exists), list and
// delete (404 when missing); records each request as "METHOD path".
class DeploymentApi : public kube::HttpTransport {
 public:
  explicit DeploymentApi(std::vector<std::string>* requests) : requests_(requests) {}
  absl::StatusOr<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    requests_->push_back(request.method + " " + request.path);
    kube::HttpResponse response;
    if (request.method == "POST" && request.path == kDeployments) {
      json deployment = json::parse(request.body);
      std::string name = deployment["metadata"]["name"];
      response.status = deployments.contains(name) ? 409 : 201;
      deployments.emplace(name, deployment);
    } else if (request.method == "GET" && request.path.starts_with(kDeployments)) {
      json items = json::array();
      for (const auto& [name, deployment] : deployments) items.push_back(deployment);
      response.status = 200;
      response.body = json{{"items", items}}.dump();
    } else if (request.method == "DELETE") {
      std::string name = request.path.substr(request.path.rfind('/') + 1);
      response.status = deployments.erase(name) > 0 ? 200 : 404;
      deletions.push_back(json::parse(request.body));
    } else {
      response.status = 405;
    }
    return response;
  }

  std::map<std::string, json> deployments;
  std::vector<json> deletions;

 private:
  std::vector<std::string>* requests_;
};

class MpsDeployments : public ::testing::Test {
 protected:
  MpsDeployments() {
    auto transport = std::make_unique<DeploymentApi>(&requests_);
    api_ = transport.get();
    client_ =
        std::make_unique<kube::Client>(std::move(transport), kube::RetryPolicy{}, "test", env_);
  }

  DeploymentMpsOptions Options() const {
    return {.node_name = "node-a",
            .name_space = "gpunode-system",
            .image = "ghcr.io/gpunode/gpunode:0.1.0",
            .mps_dir = dir_.path() + "/mps",
            .global_args = {"--sim", "dgx-h100", "--log-level", "info"},
            .driver_root = "",
            .ready_timeout = absl::Seconds(30)};
  }
  DeploymentApi& api() { return *api_; }
  // Plays the daemon: its files as `gpunode mps-control-daemon claim` leaves them once it answers.
  void DaemonReady(const std::string& id) {
    std::filesystem::create_directories(dir_.path() + "/mps/" + id + "/pipe");
    std::ofstream(dir_.path() + "/mps/" + id + "/.ready");
  }

  testing::TempDir dir_{"gpunode-dra-mps"};
  testing::SimulatedEnv env_;
  std::vector<std::string> requests_;
  DeploymentApi* api_ = nullptr;  // owned by client_
  std::unique_ptr<kube::Client> client_;
};

const MpsDaemonSpec kSpec = {.id = "u1-0",
                             .gpu_uuids = {"GPU-aaaa", "GPU-bbbb"},
                             .active_thread_percentage = 50,
                             .pinned_mib = {{"GPU-bbbb", 2048}}};

TEST(MpsPlan, TheLimitsAreNvidiasDefaultThenPerDeviceByUuidOrIndexInMib) {
  MpsRequest request{.config_index = 2,
                     .default_pinned_bytes = uint64_t{4} << 30,
                     .pinned_bytes = {{"GPU-bbbb", uint64_t{1} << 30}, {"2", uint64_t{3} << 29}}};
  absl::StatusOr<MpsDaemonSpec> spec =
      PlanMpsDaemon("u1", request, {"GPU-aaaa", "GPU-bbbb", "GPU-cccc"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->id, "u1-2");
  EXPECT_EQ(spec->pinned_mib, (std::map<std::string, uint64_t>{
                                  {"GPU-aaaa", 4096}, {"GPU-bbbb", 1024}, {"GPU-cccc", 1536}}));
  EXPECT_EQ(spec->active_thread_percentage, 0);
  request.pinned_bytes = {{"GPU-zzzz", uint64_t{1} << 30}};
  spec = PlanMpsDaemon("u1", request, {"GPU-aaaa"});
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("GPU-zzzz is neither the UUID nor the index"));
}

TEST_F(MpsDeployments, TheDeploymentRunsGpunodesClaimDaemonOnThisNodePrivilegedWithItsFiles) {
  DeploymentMpsDaemons daemons(Options(), *client_, env_);
  json deployment = daemons.Deployment(kSpec);
  EXPECT_EQ(deployment["metadata"]["name"], "mps-control-daemon-u1-0");
  EXPECT_EQ(deployment["metadata"]["namespace"], "gpunode-system");
  const json& pod = deployment["spec"]["template"]["spec"];
  EXPECT_EQ(pod["nodeName"], "node-a");
  EXPECT_EQ(pod["automountServiceAccountToken"], false);
  ASSERT_EQ(pod["containers"].size(), 1u);
  const json& container = pod["containers"][0];
  EXPECT_EQ(container["image"], "ghcr.io/gpunode/gpunode:0.1.0");
  const std::string root = dir_.path() + "/mps/u1-0";
  EXPECT_EQ(container["args"],
            json({"--sim", "dgx-h100", "--log-level", "info", "mps-control-daemon", "claim",
                  "--root", root, "--devices", "GPU-aaaa,GPU-bbbb", "--active-thread-percentage",
                  "50", "--pinned-memory-limit", "GPU-bbbb=2048"}));
  EXPECT_EQ(container["securityContext"], json({{"privileged", true}}));
  EXPECT_EQ(
      container["volumeMounts"],
      json::array({{{"name", "mps"}, {"mountPath", root}, {"mountPropagation", "Bidirectional"}}}));
  EXPECT_EQ(pod["volumes"][0]["hostPath"]["path"], root);
  // The selector names this daemon alone, so that two claims' Deployments never share pods.
  EXPECT_EQ(deployment["spec"]["selector"]["matchLabels"],
            json({{"gpunode.io/mps-control-daemon", "u1-0"}}));

  // A claim's daemon lives in a directory named by its UID's last group: its sockets must fit a
  // unix socket's 107 bytes under a kubelet root longer than /var/lib/kubelet.
  EXPECT_EQ(daemons.Root("a9b3fc20-3355-4974-af26-63b696d4928b-1"),
            dir_.path() + "/mps/63b696d4928b-1");
  DeploymentMpsOptions deep = Options();
  deep.mps_dir = "/var/lib/" + std::string(60, 'k') + "/plugins/gpu.nvidia.com/mps";
  absl::Status too_long = DeploymentMpsDaemons(deep, *client_, env_).Start(kSpec);
  EXPECT_EQ(too_long.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(too_long.message(), HasSubstr("over a unix socket's 107"));

  DeploymentMpsOptions with_driver = Options();
  with_driver.driver_root = "/run/nvidia/driver";
  json mounted = DeploymentMpsDaemons(with_driver, *client_, env_).Deployment(kSpec);
  EXPECT_THAT(mounted["spec"]["template"]["spec"]["volumes"],
              ::testing::Contains(
                  json{{"name", "driver-root"},
                       {"hostPath", {{"path", "/run/nvidia/driver"}, {"type", "Directory"}}}}));
}

TEST_F(MpsDeployments, StartCreatesTheDeploymentOnceAndReturnsWhenTheDaemonIsReady) {
  DeploymentMpsDaemons daemons(Options(), *client_, env_);
  const absl::Time start = env_.Now();
  // The daemon answers two seconds after the Deployment is made.
  env_.OnSleep([&](absl::Time now) {
    if (now - start >= absl::Seconds(2)) DaemonReady("u1-0");
  });
  ASSERT_TRUE(daemons.Start(kSpec).ok());
  EXPECT_GE(env_.Now() - start, absl::Seconds(2));
  EXPECT_LT(env_.Now() - start, absl::Seconds(3));
  // The kubelet asks again: the Deployment exists (409), the daemon is ready.
  ASSERT_TRUE(daemons.Start(kSpec).ok());
  EXPECT_THAT(requests_, ElementsAre(std::string("POST ") + kDeployments,
                                     std::string("POST ") + kDeployments));
}

TEST_F(MpsDeployments, ADaemonNotReadyInTimeFailsWithWhatItsLogSaysAndNoImageFailsAtOnce) {
  DeploymentMpsDaemons daemons(Options(), *client_, env_);
  std::filesystem::create_directories(dir_.path() + "/mps/u1-0/log");
  std::ofstream(dir_.path() + "/mps/u1-0/log/control.log")
      << "[2026-12-06 10:00:00.000 Control 7] Starting control daemon\n"
         "[2026-12-06 10:00:00.100 Control 7] Failed to start: no CUDA-capable device\n";
  absl::Status st = daemons.Start(kSpec);
  ASSERT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(st.message(), HasSubstr("mps-control-daemon-u1-0 is not ready after 30s"));
  EXPECT_THAT(st.message(), HasSubstr("Failed to start: no CUDA-capable device"));
  EXPECT_THAT(st.message(), HasSubstr("kubectl -n gpunode-system describe deployment"));

  DeploymentMpsOptions no_image = Options();
  no_image.image.clear();
  requests_.clear();
  st = DeploymentMpsDaemons(no_image, *client_, env_).Start(kSpec);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("--image-name"));
  EXPECT_TRUE(requests_.empty());
}

TEST_F(MpsDeployments, StopDeletesTheDeploymentAndWaitsUntilTheDaemonHasQuit) {
  DeploymentMpsDaemons daemons(Options(), *client_, env_);
  DaemonReady("u1-0");
  ASSERT_TRUE(daemons.Start(kSpec).ok());
  const absl::Time start = env_.Now();
  // The pod's stop: the daemon quits and takes its marker away a second later.
  env_.OnSleep([&](absl::Time now) {
    if (now - start >= absl::Seconds(1)) std::filesystem::remove(dir_.path() + "/mps/u1-0/.ready");
  });
  ASSERT_TRUE(daemons.Stop("u1-0").ok());
  EXPECT_GE(env_.Now() - start, absl::Seconds(1));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/mps/u1-0"));
  ASSERT_EQ(api().deletions.size(), 1u);
  EXPECT_EQ(api().deletions[0]["propagationPolicy"], "Background");
  // Stopped already: nothing to delete is no error.
  EXPECT_TRUE(daemons.Stop("u1-0").ok());

  // One that never quits fails the stop, and its files stay.
  env_.OnSleep(nullptr);
  DaemonReady("u2-0");
  absl::Status st = daemons.Stop("u2-0");
  ASSERT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(st.message(), HasSubstr("has not quit after 30s"));
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/mps/u2-0/.ready"));
}

TEST_F(MpsDeployments, AtStartTheDaemonsOfThisNodeThatNoClaimHoldsAreStopped) {
  DeploymentMpsDaemons daemons(Options(), *client_, env_);
  for (const char* id : {"kept-0", "stale-0"}) {
    DaemonReady(id);
    ASSERT_TRUE(daemons.Start({.id = id, .gpu_uuids = {"GPU-aaaa"}}).ok());
  }
  json elsewhere = daemons.Deployment({.id = "other-0", .gpu_uuids = {"GPU-aaaa"}});
  elsewhere["spec"]["template"]["spec"]["nodeName"] = "node-b";
  api().deployments["mps-control-daemon-other-0"] = elsewhere;
  // A directory left by a daemon that has quit.
  std::filesystem::create_directories(dir_.path() + "/mps/gone-0/log");
  std::filesystem::remove(dir_.path() + "/mps/stale-0/.ready");

  daemons.StopAllBut({"kept-0"});
  std::vector<std::string> left;
  for (const auto& [name, deployment] : api().deployments) left.push_back(name);
  EXPECT_THAT(left, ElementsAre("mps-control-daemon-kept-0", "mps-control-daemon-other-0"));
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/mps/kept-0/.ready"));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/mps/stale-0"));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/mps/gone-0"));
}

}  // namespace
}  // namespace gpunode::dra
