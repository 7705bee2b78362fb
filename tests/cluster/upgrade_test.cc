// `cluster upgrade` against the API server double on a simulated clock: sleeping only advances
// time, and the test plays the rest of the cluster as time passes (a node in maintenance
// reboots and comes back on the new driver; the kubelet runs smoke pods). 3 pools, 12 nodes.
#include "cluster/upgrade.h"

#include <algorithm>
#include <csignal>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cluster/maintenance_job.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "harness/gpu_cluster_objects.h"
#include "harness/simulated_env.h"
#include "kube/lease.h"
#include "nlohmann/json.hpp"
#include "test_support.h"

namespace gpunode::cluster {
namespace {

using json = nlohmann::json;
using gpunode::testing::ApiServerDouble;

constexpr char kOldDriver[] = "535.129.03";
constexpr char kNewDriver[] = "550.90.07";
constexpr char kNamespace[] = "gpu-ops";
const std::vector<std::string> kPools = {"canary", "training", "inference"};
constexpr int kNodesPerPool = 4;
constexpr int kMaxUnavailable = 2;
constexpr absl::Duration kReboot = absl::Minutes(4);

std::string NodeName(const std::string& pool, int i) { return pool + "-" + std::to_string(i); }

std::string Label(const json& node, const std::string& key) {
  const json& labels = node["metadata"].value("labels", json::object());
  return labels.value(key, "");
}

std::string Annotation(const json& node, const std::string& key) {
  const json& annotations = node["metadata"].value("annotations", json::object());
  return annotations.value(key, "");
}

bool Unschedulable(const json& node) {
  return node.contains("spec") && node["spec"].value("unschedulable", false);
}

bool Ready(const json& node) {
  for (const json& c : node["status"]["conditions"]) {
    if (c["type"] == "Ready") return c["status"] == "True";
  }
  return false;
}

class UpgradeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = gpunode::testing::StartPlainApiServer();
    ASSERT_NE(server_, nullptr);
    server_->AddObject(gpunode::testing::DevicePluginDaemonSet());
    for (const std::string& pool : kPools) {
      for (int i = 0; i < kNodesPerPool; ++i) {
        std::string name = NodeName(pool, i);
        json node = gpunode::testing::GpuNode(name);
        node["metadata"]["labels"]["pool"] = pool;
        node["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] = kOldDriver;
        server_->AddObject(node);
        server_->AddObject(gpunode::testing::DevicePluginPod(name));
      }
    }

    options_.driver_version = kNewDriver;
    options_.pools = kPools;
    options_.max_unavailable.count = kMaxUnavailable;
    options_.soak = absl::Hours(2);
    options_.soak_check_interval = absl::Minutes(20);
    options_.poll_interval = absl::Seconds(10);
    options_.maintenance_timeout = absl::Minutes(30);
    options_.job_namespace = kNamespace;
    options_.verify.ns = kNamespace;
    options_.verify.poll_interval = absl::Seconds(2);
    options_.lease.ns = kNamespace;
    options_.lease.identity = "upgrader-a";
    options_.lease.duration = absl::Minutes(15);

    NewRun();
    ASSERT_NE(client_, nullptr);

    // The kubelet: a smoke pod that is looked at has run and printed what it saw. And the
    // invariants every test holds: before any change, no pool has more nodes out of service
    // than --max-unavailable allows, and the lease has not lapsed.
    server_->OnRequest([this](const ApiServerDouble::Request& req) {
      Spend(req);
      CheckLeaseHeld(req);
      const std::string smoke =
          std::string("/api/v1/namespaces/") + kNamespace + "/pods/gpunode-verify-";
      if (req.method == "GET" && req.path.rfind(smoke, 0) == 0 &&
          req.path.find("/log") == std::string::npos) {
        std::string pod = req.path.substr(smoke.size() - std::string("gpunode-verify-").size());
        if (server_->Pod(kNamespace, pod) && !HoldSmokePods()) {
          server_->SetPodLog(kNamespace, pod, gpunode::testing::SmokeDoctorReport());
          server_->SetPodPhase(kNamespace, pod, "Succeeded");
        }
      }
      if (req.method == "PATCH") {
        CheckAvailability();
        RecordState(req);
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (fail_next_request_) {
        fail_next_request_ = false;
        server_->FailNext(req.method, req.path, 403, 1);
      }
    });
  }

  void TearDown() override {
    server_->OnRequest(nullptr);
    CheckAvailability();
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(changes_on_a_lapsed_lease_, std::vector<std::string>{})
        << "changes made after the lease's renewTime + leaseDurationSeconds";
  }

  // A request takes request_cost_ of simulated time (a slow API server). A pass of the rollout
  // runs from one read of the fleet to the next; its busy time is the time its requests took,
  // not the waits between them (which renew the lease as they sleep).
  void Spend(const ApiServerDouble::Request& req) {
    std::lock_guard<std::mutex> lock(mu_);
    env_->Advance(request_cost_);
    if (req.method == "GET" && req.path == "/api/v1/nodes") {
      longest_pass_ = std::max(longest_pass_, pass_requests_ * request_cost_);
      pass_requests_ = 0;
    }
    ++pass_requests_;
  }

  // Every change but the lease's own is made while the lease is live: renewed within its
  // duration, as another copy reads it before taking it over.
  void CheckLeaseHeld(const ApiServerDouble::Request& req) {
    if (req.method == "GET" || req.path.find("/leases") != std::string::npos) return;
    std::optional<json> lease = server_->Lease(kNamespace, "gpunode-upgrade");
    if (!lease) return;
    const json& spec = (*lease)["spec"];
    absl::Time renewed;
    std::string error;
    if (!absl::ParseTime(absl::RFC3339_full, spec.value("renewTime", ""), &renewed, &error)) {
      ADD_FAILURE() << "renewTime: " << error;
      return;
    }
    absl::Duration duration = absl::Seconds(spec.value("leaseDurationSeconds", 0));
    std::lock_guard<std::mutex> lock(mu_);
    if (renewed + duration < env_->Now())
      changes_on_a_lapsed_lease_.push_back(req.method + " " + req.path);
  }

  bool HoldSmokePods() {
    std::lock_guard<std::mutex> lock(mu_);
    return hold_smoke_pods_;
  }

  absl::Time Now() { return env_->Now(); }

  // The Env of one run of the command, from the time the last one ended, and its API client. A
  // run stopped by a signal leaves its Env stopped; the next run is a new process with a new one.
  void NewRun() {
    env_ = std::make_unique<gpunode::testing::SimulatedEnv>(
        gpunode::testing::SimulatedEnv::Options{.start = env_ ? env_->Now() : kStart});
    client_ = gpunode::testing::ClientFor(*server_, *env_);
    env_->OnSleep([this](absl::Time) {
      ClusterMoves();
      if (after_sleep_) after_sleep_();
    });
  }

  // Time passed (the rollout slept), and the cluster moves: a node that entered maintenance
  // reboots (NotReady) and comes back on the new driver after kReboot, unless the test says it
  // never returns.
  void ClusterMoves() {
    if (on_advance_) on_advance_(Now());
    for (const std::string& pool : kPools) {
      for (int i = 0; i < kNodesPerPool; ++i) {
        std::string name = NodeName(pool, i);
        json node = *server_->Node(name);
        if (Label(node, std::string(kUpgradeStateLabel)) != "node-maintenance-required") continue;
        if (never_returns_.count(name)) continue;
        absl::Time since;
        std::string error;
        ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full,
                                    Annotation(node, std::string(kUpgradeMaintenanceAnnotation)),
                                    &since, &error));
        bool up = Now() - since >= kReboot;
        bool upgraded = Label(node, "nvidia.com/cuda.driver-version.full") == kNewDriver;
        if (up && !upgraded) {
          node["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] = kNewDriver;
          node["status"]["conditions"] = {{{"type", "Ready"}, {"status", "True"}}};
          server_->AddObject(node);
        } else if (!up && Ready(node)) {
          node["status"]["conditions"] = {{{"type", "Ready"}, {"status", "False"}}};
          server_->AddObject(node);
        }
      }
    }
  }

  int MaxUnavailable() const { return options_.max_unavailable.For(kNodesPerPool); }

  void CheckAvailability() {
    for (const std::string& pool : kPools) {
      int out = 0;
      for (int i = 0; i < kNodesPerPool; ++i) {
        std::optional<json> node = server_->Node(NodeName(pool, i));
        if (node && (Unschedulable(*node) || !Ready(*node))) ++out;
      }
      std::lock_guard<std::mutex> lock(mu_);
      max_seen_out_[pool] = std::max(max_seen_out_[pool], out);
    }
  }

  // The order in which nodes entered each state, from the PATCHes that moved them.
  void RecordState(const ApiServerDouble::Request& req) {
    json patch = json::parse(req.body, nullptr, false);
    if (!patch.is_object() || !patch.contains("metadata")) return;
    const json& metadata = patch["metadata"];
    std::string state;
    if (metadata.contains("labels")) {
      state = metadata["labels"].value(std::string(kUpgradeStateLabel), "");
    }
    // The start of a pool's soak is a state of the rollout too.
    if (metadata.contains("annotations") &&
        metadata["annotations"]
            .value(std::string(kUpgradeSoakStartedAnnotation), json())
            .is_string()) {
      state = "soak";
    }
    if (state.empty()) return;
    std::string node = req.path.substr(std::string("/api/v1/nodes/").size());
    std::lock_guard<std::mutex> lock(mu_);
    transitions_.push_back({node, state, env_->Now()});
    if (state == interrupt_on_state_ && !interrupt_armed_) {
      interrupt_armed_ = true;
      // SIGTERM right after the change, or the process dying as it sends it.
      if (crash_instead_) {
        fail_next_request_ = true;
      } else {
        env_->RequestStop(SIGTERM);
      }
    }
  }

  absl::StatusOr<UpgradeResult> Run() { return RunUpgrade(*client_, options_, *env_, out_); }

  // Runs to the end, resuming after every interruption or injected crash.
  UpgradeResult RunToEnd() {
    for (int attempt = 0; attempt < 20; ++attempt) {
      absl::StatusOr<UpgradeResult> result = Run();
      if (result.ok() && result->outcome != UpgradeResult::kInterrupted) return *result;
      ++restarts_;
      NewRun();
    }
    ADD_FAILURE() << "the rollout never finished";
    return {};
  }

  json Node(const std::string& name) { return *server_->Node(name); }

  struct Transition {
    std::string node, state;
    absl::Time at;
  };

  // When a node of `pool` first entered `state`, or when the last one did.
  absl::Time First(const std::string& pool, const std::string& state) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Transition& t : transitions_) {
      if (t.node.rfind(pool + "-", 0) == 0 && t.state == state) return t.at;
    }
    return absl::InfiniteFuture();
  }
  absl::Time Last(const std::string& pool, const std::string& state) {
    std::lock_guard<std::mutex> lock(mu_);
    absl::Time last = absl::InfinitePast();
    for (const Transition& t : transitions_) {
      if (t.node.rfind(pool + "-", 0) == 0 && t.state == state) last = t.at;
    }
    return last;
  }

  void ExpectAllUpgraded() {
    for (const std::string& pool : kPools) {
      for (int i = 0; i < kNodesPerPool; ++i) {
        json node = Node(NodeName(pool, i));
        SCOPED_TRACE(NodeName(pool, i));
        EXPECT_EQ(Label(node, std::string(kUpgradeStateLabel)), "upgrade-done");
        EXPECT_EQ(Label(node, "nvidia.com/cuda.driver-version.full"), kNewDriver);
        EXPECT_EQ(Label(node, "nvidia.com/gpu.state"), "");
        EXPECT_NE(Annotation(node, std::string(kUpgradeSoakPassedAnnotation)), "");
      }
    }
  }

  std::unique_ptr<ApiServerDouble> server_;
  std::unique_ptr<kube::Client> client_;
  UpgradeOptions options_;
  static constexpr absl::Time kStart = absl::FromUnixSeconds(1793523600);  // 2026-11-01
  std::unique_ptr<gpunode::testing::SimulatedEnv> env_;
  std::ostringstream out_;
  std::function<void(absl::Time)> on_advance_;  // the rest of the cluster, as time passes
  std::function<void()> after_sleep_;           // what else happens while the rollout sleeps
  std::set<std::string> never_returns_;
  int restarts_ = 0;

  std::mutex mu_;
  std::map<std::string, int> max_seen_out_;
  std::vector<Transition> transitions_;
  std::string interrupt_on_state_;
  bool interrupt_armed_ = false;
  bool crash_instead_ = false;
  bool fail_next_request_ = false;
  bool hold_smoke_pods_ = false;  // the kubelet never finishes a smoke pod
  absl::Duration request_cost_ = absl::ZeroDuration();
  int pass_requests_ = 0;
  absl::Duration longest_pass_ = absl::ZeroDuration();
  std::vector<std::string> changes_on_a_lapsed_lease_;
};

TEST_F(UpgradeTest, RollsOutPoolByPoolWithASoakBetween) {
  absl::StatusOr<UpgradeResult> result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, UpgradeResult::kDone) << result->summary;
  ExpectAllUpgraded();
  for (const std::string& pool : kPools) {
    EXPECT_FALSE(Unschedulable(Node(NodeName(pool, 0))));
    EXPECT_LE(max_seen_out_[pool], kMaxUnavailable) << pool;
    EXPECT_GE(max_seen_out_[pool], 2) << pool << ": the nodes went one by one";
  }
  // The soak says one line a check per pool, never verify's step-by-step lines: a 2 h soak
  // checked every 20 min is five lines and the last.
  std::string out = out_.str();
  for (const std::string& pool : kPools) {
    for (const char* elapsed : {"20m", "1h", "1h40m"}) {
      EXPECT_NE(out.find(absl::StrCat("pool ", pool, ": ", elapsed, " of 2h soaked, ",
                                      kNodesPerPool, " node(s) checked, no regression\n")),
                std::string::npos)
          << pool << " " << elapsed << "\n"
          << out;
    }
    EXPECT_NE(out.find(absl::StrCat("pool ", pool, " soaked 2h with no regression\n")),
              std::string::npos)
        << out;
  }
  // verify's lines come from each node's validation step alone.
  size_t validations = 0;
  for (size_t at = out.find("  capacity: pass"); at != std::string::npos;
       at = out.find("  capacity: pass", at + 1)) {
    ++validations;
  }
  EXPECT_EQ(validations, kPools.size() * kNodesPerPool) << out;
  // No node of a pool is touched before the pool before it is done and soaked.
  for (size_t i = 1; i < kPools.size(); ++i) {
    absl::Time prev_done = Last(kPools[i - 1], "upgrade-done");
    absl::Time next_start = First(kPools[i], "cordon-required");
    EXPECT_GE(next_start - prev_done, options_.soak) << kPools[i];
  }
  // Every node went through the operator's states in order.
  std::vector<std::string> want = {"upgrade-required",
                                   "cordon-required",
                                   "wait-for-jobs-required",
                                   "pod-deletion-required",
                                   "drain-required",
                                   "node-maintenance-required",
                                   "post-maintenance-required",
                                   "validation-required",
                                   "uncordon-required",
                                   "upgrade-done",
                                   "soak"};
  std::vector<std::string> seen;
  for (const Transition& t : transitions_) {
    if (t.node == "training-3") seen.push_back(t.state);
  }
  EXPECT_EQ(seen, want);
  // The lease was given up at the end.
  std::optional<json> lease = server_->Lease(kNamespace, "gpunode-upgrade");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ((*lease)["spec"].value("holderIdentity", "x"), "");
  // Run again: nothing to do.
  size_t before = transitions_.size();
  result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, UpgradeResult::kDone);
  EXPECT_EQ(transitions_.size(), before);
}

TEST_F(UpgradeTest, ANodeThatNeverReturnsFailsAndStopsThePool) {
  never_returns_ = {"training-2"};
  absl::StatusOr<UpgradeResult> result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, UpgradeResult::kHalted);
  EXPECT_NE(result->summary.find("training-2"), std::string::npos) << result->summary;
  EXPECT_NE(result->summary.find("pools not started: inference"), std::string::npos)
      << result->summary;
  // The command to run once the node is fixed, with the node's name in it.
  EXPECT_NE(result->summary.find(std::string("`kubectl label node training-2 ") +
                                 std::string(kUpgradeStateLabel) + "-` and run again"),
            std::string::npos)
      << result->summary;
  // While it waited, one progress line a minute (the passes come every 10 s, and more often).
  std::string out = out_.str();
  size_t progress = 0;
  for (size_t at = out.find("node training-2: in maintenance for "); at != std::string::npos;
       at = out.find("node training-2: in maintenance for ", at + 1)) {
    ++progress;
  }
  EXPECT_EQ(progress, 29u) << out;  // minutes 1 to 29 of the 30-minute timeout
  EXPECT_NE(out.find("node training-2: in maintenance for 1m of --maintenance-timeout 30m; "
                     "waiting for nvidia.com/cuda.driver-version.full=550.90.07 (now "),
            std::string::npos)
      << out;
  json failed = Node("training-2");
  EXPECT_EQ(Label(failed, std::string(kUpgradeStateLabel)), "upgrade-failed");
  EXPECT_NE(
      Annotation(failed, std::string(kUpgradeFailureAnnotation)).find("--maintenance-timeout"),
      std::string::npos);
  EXPECT_TRUE(Unschedulable(failed)) << "a failed node stays out of service";
  // Nothing started after the failure; the pool's other nodes were not all upgraded.
  absl::Time failed_at = First("training", "upgrade-failed");
  EXPECT_GT(First("training", "upgrade-failed"), absl::InfinitePast());
  for (const Transition& t : transitions_) {
    if (t.state == "cordon-required") {
      EXPECT_LT(t.at, failed_at) << t.node;
    }
  }
  for (int i = 0; i < kNodesPerPool; ++i) {
    json node = Node(NodeName("inference", i));
    EXPECT_EQ(Label(node, std::string(kUpgradeStateLabel)), "") << "inference is untouched";
    EXPECT_FALSE(Unschedulable(node));
  }
  // Run again: still halted, and nothing changes.
  size_t before = transitions_.size();
  result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, UpgradeResult::kHalted);
  EXPECT_EQ(transitions_.size(), before);
}

// An hour into the canary pool's soak, node-problem-detector reports an XID on canary-3.
class UpgradeSoakTest : public UpgradeTest {
 protected:
  void PostXidDuringTheSoak(int xid, const std::string& what) {
    after_sleep_ = [this, xid, what] {
      absl::Time soak_from = Last("canary", "upgrade-done");
      if (!posted_ && soak_from != absl::InfinitePast() && Now() - soak_from >= absl::Hours(1)) {
        posted_ = true;
        server_->AddObject(
            {{"kind", "Event"},
             {"apiVersion", "v1"},
             {"metadata", {{"name", "canary-3.xid"}, {"namespace", "default"}}},
             {"involvedObject", {{"kind", "Node"}, {"name", "canary-3"}}},
             {"reason", "NVRMXid"},
             {"message", "NVRM: Xid (PCI:0000:3b:00): " + std::to_string(xid) + ", " + what},
             {"type", "Warning"},
             {"lastTimestamp", absl::FormatTime(absl::RFC3339_sec, Now(), absl::UTCTimeZone())}});
      }
    };
  }
  bool posted_ = false;
};

TEST_F(UpgradeSoakTest, AnXidDuringTheSoakHaltsTheRollout) {
  PostXidDuringTheSoak(79, "GPU has fallen off the bus");
  absl::StatusOr<UpgradeResult> result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(posted_);
  EXPECT_EQ(result->outcome, UpgradeResult::kHalted);
  EXPECT_NE(result->summary.find("canary-3"), std::string::npos) << result->summary;
  EXPECT_NE(result->summary.find("Xid"), std::string::npos) << result->summary;
  EXPECT_NE(result->summary.find("pools not started: training, inference"), std::string::npos)
      << result->summary;
  EXPECT_EQ(Label(Node("canary-3"), std::string(kUpgradeStateLabel)), "upgrade-failed");
  EXPECT_EQ(First("training", "cordon-required"), absl::InfiniteFuture());
  for (int i = 0; i < kNodesPerPool; ++i) {
    EXPECT_EQ(Label(Node(NodeName("training", i)), std::string(kUpgradeStateLabel)), "");
  }
}

// What counts as a regression is the operator's: an XID applications cause, or XIDs altogether.
TEST_F(UpgradeSoakTest, XidsThatDoNotCountLetItGoOn) {
  PostXidDuringTheSoak(13, "Graphics SM Warp Exception");
  options_.ignore_xids = {13, 31, 43};
  absl::StatusOr<UpgradeResult> result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(posted_);
  EXPECT_EQ(result->outcome, UpgradeResult::kDone) << result->summary;
  ExpectAllUpgraded();
}

TEST_F(UpgradeSoakTest, WithoutXidAsARegressionItGoesOn) {
  PostXidDuringTheSoak(79, "GPU has fallen off the bus");
  ASSERT_TRUE(ParseRegressions("unhealthy-gpus,verify", options_).ok());
  absl::StatusOr<UpgradeResult> result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(posted_);
  EXPECT_EQ(result->outcome, UpgradeResult::kDone) << result->summary;
}

TEST_F(UpgradeSoakTest, AGpuLostDuringTheSoakHaltsIt) {
  after_sleep_ = [this] {
    absl::Time soak_from = Last("canary", "upgrade-done");
    if (!posted_ && soak_from != absl::InfinitePast() && Now() - soak_from >= absl::Hours(1)) {
      posted_ = true;
      json node = Node("canary-0");
      node["status"]["allocatable"]["nvidia.com/gpu"] = "7";  // one GPU turned unhealthy
      server_->AddObject(node);
    }
  };
  absl::StatusOr<UpgradeResult> result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, UpgradeResult::kHalted);
  EXPECT_NE(result->summary.find("canary-0 (pool canary): regression during the soak of pool "
                                 "canary: cluster verify: capacity"),
            std::string::npos)
      << result->summary;
}

// A GPU pod of a Job (which a JobSet made) training on canary-0 since `started`.
void AddTrainingPod(ApiServerDouble& server, absl::Time started) {
  server.AddObject(gpunode::testing::JobSetJob());
  server.AddObject(gpunode::testing::JobSetPod(
      "pretrain-0", "canary-0",
      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", started, absl::UTCTimeZone())));
}

// By default the rollout waits for a node's GPU jobs however long they run, evicting nothing;
// the pod and its owners are told why, and the wait says where it stands once a minute.
TEST_F(UpgradeTest, GpuJobsAreWaitedForUntilTheyEndAndTheirOwnersTold) {
  const absl::Time start = Now();
  AddTrainingPod(*server_, start - absl::Hours(1));
  on_advance_ = [&](absl::Time now) {
    if (now - start >= absl::Hours(3)) server_->SetPodPhase("ml", "pretrain-0", "Succeeded");
  };
  UpgradeResult result = RunToEnd();
  EXPECT_EQ(result.outcome, UpgradeResult::kDone) << result.summary;
  ExpectAllUpgraded();
  EXPECT_EQ(server_->CountRequests("POST", "/api/v1/namespaces/ml/pods/pretrain-0/eviction"), 0);
  absl::Time waited_until = absl::InfinitePast();
  for (const Transition& t : transitions_) {
    if (t.node == "canary-0" && t.state == "pod-deletion-required") waited_until = t.at;
  }
  EXPECT_GE(waited_until - start, absl::Hours(3));

  const std::string out = out_.str();
  const std::string line = "node canary-0: waiting ";
  int lines = 0;
  for (size_t at = out.find(line); at != std::string::npos; at = out.find(line, at + 1)) ++lines;
  EXPECT_GE(lines, 175) << out;
  EXPECT_LE(lines, 181) << out;
  EXPECT_NE(out.find("node canary-0: waiting 1h for 1 pod(s) to finish, oldest ml/pretrain-0 "
                     "(running 2h), "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("none is evicted (--wait-for-jobs-timeout sets a deadline): ml/pretrain-0\n"),
            std::string::npos)
      << out;

  json events = json::parse(*client_->Get("/api/v1/events"));
  std::set<std::string> told;
  for (const json& event : events["items"]) {
    if (event.value("reason", "") != "NodeDraining") continue;
    told.insert(event["involvedObject"].value("kind", "") + "/" +
                event["involvedObject"].value("name", ""));
    EXPECT_EQ(event["source"]["component"], "gpunode-cluster-upgrade");
    EXPECT_NE(event["message"].get<std::string>().find(
                  std::string("is draining for its driver upgrade to ") + kNewDriver),
              std::string::npos)
        << event.dump();
  }
  EXPECT_EQ(told,
            (std::set<std::string>{"Pod/pretrain-0", "Job/pretrain-workers-0", "JobSet/pretrain"}));
}

// With --wait-for-jobs-timeout the pod is told when its eviction comes, and evicted then.
TEST_F(UpgradeTest, AWaitForJobsTimeoutIsToldAndThenEvicts) {
  const absl::Time start = Now();
  AddTrainingPod(*server_, start - absl::Hours(1));
  options_.wait_for_jobs_timeout = absl::Hours(1);
  UpgradeResult result = RunToEnd();
  EXPECT_EQ(result.outcome, UpgradeResult::kDone) << result.summary;
  EXPECT_EQ(server_->CountRequests("POST", "/api/v1/namespaces/ml/pods/pretrain-0/eviction"), 1);
  EXPECT_FALSE(server_->Pod("ml", "pretrain-0").has_value());
  std::string deadline;
  for (const ApiServerDouble::Request& r : server_->Requests()) {
    if (r.method == "PATCH" && r.path == "/api/v1/namespaces/ml/pods/pretrain-0") {
      deadline =
          json::parse(r.body)["metadata"]["annotations"].value("gpunode.io/eviction-deadline", "");
    }
  }
  absl::Time at;
  std::string error;
  ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, deadline, &at, &error)) << deadline;
  EXPECT_GE(at - start, absl::Hours(1));
  EXPECT_LT(at - start, absl::Hours(1) + absl::Minutes(5));
  EXPECT_NE(out_.str().find("evicting in 59m"), std::string::npos) << out_.str();
}

TEST_F(UpgradeTest, AnAlreadyCordonedNodeStaysCordonedAndTakesNoSlot) {
  json node = Node("canary-1");
  node["spec"]["unschedulable"] = true;
  server_->AddObject(node);
  absl::StatusOr<UpgradeResult> result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, UpgradeResult::kDone) << result->summary;
  ExpectAllUpgraded();
  EXPECT_TRUE(Unschedulable(Node("canary-1"))) << "a person cordoned it; it stays so";
  EXPECT_FALSE(Unschedulable(Node("canary-2")));
  // It went first, as it was out of service anyway.
  auto first_start = std::find_if(transitions_.begin(), transitions_.end(),
                                  [](const Transition& t) { return t.state == "cordon-required"; });
  ASSERT_NE(first_start, transitions_.end());
  EXPECT_EQ(first_start->node, "canary-1");
  EXPECT_LE(max_seen_out_["canary"], kMaxUnavailable);
}

// The process stops in a state (or as a pool's soak begins) and is started again, and the rollout
// finishes: stopped between steps (SIGTERM), or crashed in the middle of one (the request that
// moves the node into the state fails, as if the process died as it sent it).
class UpgradeResumeTest : public UpgradeTest,
                          public ::testing::WithParamInterface<std::tuple<const char*, bool>> {};

TEST_P(UpgradeResumeTest, FinishesAfterAStopInTheState) {
  auto [state, crash] = GetParam();
  options_.soak = absl::Minutes(30);
  {
    std::lock_guard<std::mutex> lock(mu_);
    interrupt_on_state_ = state;
    crash_instead_ = crash;
  }
  UpgradeResult result = RunToEnd();
  EXPECT_EQ(result.outcome, UpgradeResult::kDone) << result.summary;
  EXPECT_EQ(restarts_, 1) << "it was stopped once";
  ExpectAllUpgraded();
  for (const std::string& pool : kPools) EXPECT_LE(max_seen_out_[pool], kMaxUnavailable) << pool;
}

INSTANTIATE_TEST_SUITE_P(
    EveryState, UpgradeResumeTest,
    ::testing::Combine(::testing::Values("upgrade-required", "cordon-required",
                                         "wait-for-jobs-required", "pod-deletion-required",
                                         "drain-required", "node-maintenance-required",
                                         "post-maintenance-required", "validation-required",
                                         "uncordon-required", "upgrade-done", "soak"),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<const char*, bool>>& info) {
      std::string name = std::get<0>(info.param);
      name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
      return name + (std::get<1>(info.param) ? "Crash" : "Stop");
    });

TEST_F(UpgradeTest, DryRunPrintsThePlanAndChangesNothing) {
  options_.dry_run = true;
  absl::StatusOr<UpgradeResult> result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, UpgradeResult::kPlanned);
  EXPECT_EQ(server_->CountRequests("PATCH", "/"), 0);
  EXPECT_EQ(server_->CountRequests("POST", "/"), 0);
  EXPECT_NE(result->summary.find("canary (4 of 4 node(s) to upgrade, 2 at a time"),
            std::string::npos)
      << result->summary;
  EXPECT_EQ(result->nodes.size(), kPools.size() * kNodesPerPool);
}

TEST_F(UpgradeTest, ASecondCopyFindsTheLeaseHeld) {
  kube::LeaseLock other(*client_, {.ns = kNamespace,
                                   .name = "gpunode-upgrade",
                                   .identity = "upgrader-b",
                                   .duration = absl::Seconds(60)});
  ASSERT_TRUE(other.TryAcquire(Now()).ok());
  absl::StatusOr<UpgradeResult> result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, UpgradeResult::kLeaseHeld);
  EXPECT_NE(result->summary.find("upgrader-b"), std::string::npos) << result->summary;
  EXPECT_EQ(server_->CountRequests("PATCH", "/api/v1/nodes"), 0);
  // With --wait-for-lease it waits until the holder stops renewing, then takes over.
  options_.wait_for_lease = true;
  options_.soak = absl::ZeroDuration();
  result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, UpgradeResult::kDone) << result->summary;
  EXPECT_EQ(other.Renew(Now()).code(), absl::StatusCode::kFailedPrecondition)
      << "the first holder learns it lost the lease";
}

// A renewal a whole duration or more after the last one is refused even though nobody took the
// lease: another copy may have found it free in between and acted.
TEST_F(UpgradeTest, ALeaseThatLapsedIsNotRenewed) {
  kube::LeaseLock lock(*client_, {.ns = kNamespace,
                                  .name = "gpunode-upgrade",
                                  .identity = "upgrader-a",
                                  .duration = absl::Seconds(60)});
  absl::Time start = Now();
  ASSERT_TRUE(lock.TryAcquire(start).ok());
  EXPECT_TRUE(lock.Renew(start + absl::Seconds(59)).ok());
  absl::Status lapsed = lock.Renew(start + absl::Seconds(59 + 60));
  EXPECT_EQ(lapsed.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(lapsed.message(),
            "lease gpu-ops/gpunode-upgrade lapsed: last renewed 1m ago, past its duration "
            "of 1m, so another copy may have taken it; stopping");
  EXPECT_EQ(lock.Renew(start + absl::Seconds(120)).code(), absl::StatusCode::kFailedPrecondition)
      << "a lapsed lease is no longer held";
}

// A slow API server: every request takes 2 simulated seconds, so the requests of one pass over
// the fleet take longer than a one-minute lease (over two minutes, measured). The rollout renews on
// every pass and before every change, so it finishes, and no change is made on a lapsed lease
// (checked on every request, in TearDown).
TEST_F(UpgradeTest, ALeaseShorterThanAPassIsRenewedThroughIt) {
  request_cost_ = absl::Seconds(2);
  options_.lease.duration = absl::Minutes(1);
  absl::StatusOr<UpgradeResult> result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, UpgradeResult::kDone) << result->summary;
  ExpectAllUpgraded();
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_GT(longest_pass_, options_.lease.duration) << "no pass outlasted the lease";
}

// While a smoke pod runs (minutes), the lease is renewed from inside the wait; when another copy
// has taken it meanwhile, this one stops at once, deleting its smoke pod, and changes nothing
// more.
TEST_F(UpgradeTest, ACopyThatLosesTheLeaseStops) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    hold_smoke_pods_ = true;
  }
  options_.verify.timeout = absl::Hours(1);
  absl::Time stolen_at = absl::InfiniteFuture();
  after_sleep_ = [&] {
    if (stolen_at == absl::InfiniteFuture() &&
        First("canary", "validation-required") != absl::InfiniteFuture()) {
      stolen_at = Now();
      json lease = *server_->Lease(kNamespace, "gpunode-upgrade");
      lease["spec"]["holderIdentity"] = "upgrader-b";
      server_->AddObject(lease);
    }
  };
  absl::StatusOr<UpgradeResult> result = Run();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition) << result.status();
  EXPECT_NE(result.status().message().find("to upgrader-b"), std::string::npos) << result.status();
  EXPECT_LT(Now() - stolen_at, options_.lease.duration) << "it noticed within a lease duration";
  for (const Transition& t : transitions_) EXPECT_LE(t.at, stolen_at) << t.node << " " << t.state;
  for (int i = 0; i < kNodesPerPool; ++i) {
    EXPECT_FALSE(server_->Pod(kNamespace, "gpunode-verify-" + NodeName("canary", i)).has_value());
  }
  EXPECT_EQ((*server_->Lease(kNamespace, "gpunode-upgrade"))["spec"]["holderIdentity"],
            "upgrader-b");
}

TEST_F(UpgradeTest, MaintenanceJobRunsPinnedToEachNode) {
  absl::StatusOr<json> job_template = ParseMaintenanceJob(R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: driver-install
spec:
  backoffLimit: 0
  template:
    spec:
      containers:
        - name: install
          image: registry.example/driver-installer:550
          securityContext:
            privileged: true
)",
                                                          "job.yaml");
  ASSERT_TRUE(job_template.ok()) << job_template.status();
  options_.maintenance_job = *job_template;
  options_.pools = {"canary"};
  options_.soak = absl::ZeroDuration();
  for (int i = 0; i < kNodesPerPool; ++i) never_returns_.insert(NodeName("canary", i));
  // The Job controller: a maintenance Job succeeds and the node reports the new driver, except
  // on canary-2 where the installer fails.
  after_sleep_ = [&] {
    for (int i = 0; i < kNodesPerPool; ++i) {
      std::string node = NodeName("canary", i);
      std::optional<json> job = server_->Job(kNamespace, MaintenanceJobName(node));
      if (!job || !(*job)["status"].empty()) continue;
      json pod_spec = (*job)["spec"]["template"]["spec"];
      EXPECT_EQ(pod_spec["nodeName"], node);
      EXPECT_EQ(pod_spec["tolerations"].back(), json({{"operator", "Exists"}}));
      EXPECT_EQ(pod_spec["containers"][0]["env"],
                json({{{"name", "GPUNODE_NODE_NAME"}, {"value", node}},
                      {{"name", "GPUNODE_TARGET_DRIVER_VERSION"}, {"value", kNewDriver}}}));
      EXPECT_TRUE(Unschedulable(Node(node)));
      if (node == "canary-2") {
        server_->SetJobStatus(kNamespace, MaintenanceJobName(node),
                              {{"failed", 1},
                               {"conditions",
                                {{{"type", "Failed"},
                                  {"status", "True"},
                                  {"reason", "BackoffLimitExceeded"},
                                  {"message", "Job has reached the specified backoff limit"}}}}});
        continue;
      }
      server_->SetJobStatus(
          kNamespace, MaintenanceJobName(node),
          {{"succeeded", 1}, {"conditions", {{{"type", "Complete"}, {"status", "True"}}}}});
      json n = Node(node);
      n["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] = kNewDriver;
      server_->AddObject(n);
    }
  };
  absl::StatusOr<UpgradeResult> result = Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, UpgradeResult::kHalted) << result->summary;
  EXPECT_NE(result->summary.find("canary-2 (pool canary): maintenance Job gpu-ops/"
                                 "gpunode-upgrade-canary-2 failed (BackoffLimitExceeded"),
            std::string::npos)
      << result->summary;
  EXPECT_TRUE(server_->Job(kNamespace, "gpunode-upgrade-canary-2").has_value())
      << "a failed Job is kept for its logs";
  EXPECT_FALSE(server_->Job(kNamespace, "gpunode-upgrade-canary-0").has_value())
      << "a Job that succeeded is deleted";
  EXPECT_EQ(Label(Node("canary-0"), std::string(kUpgradeStateLabel)), "upgrade-done");
}

TEST_F(UpgradeTest, RefusesLabelsItCannotActOn) {
  json node = Node("canary-1");
  node["metadata"]["labels"][std::string(kUpgradeStateLabel)] = "upgrading";
  server_->AddObject(node);
  absl::StatusOr<UpgradeResult> result = Run();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("canary-1"), std::string::npos);

  node["metadata"]["labels"][std::string(kUpgradeStateLabel)] = "drain-required";
  node["metadata"]["annotations"] = {{std::string(kUpgradeTargetAnnotation), "545.23.08"}};
  server_->AddObject(node);
  result = Run();
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("mid-upgrade (drain-required) to driver 545.23.08"),
            std::string::npos)
      << result.status();

  node["metadata"]["labels"].erase(std::string(kUpgradeStateLabel));
  server_->AddObject(node);
  options_.pools = {"canary", "trainin"};
  result = Run();
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("pool trainin has no GPU nodes"), std::string::npos)
      << result.status();
  EXPECT_EQ(server_->CountRequests("PATCH", "/api/v1/nodes"), 0);
}

TEST(RegressionTest, NamesWhatCounts) {
  UpgradeOptions options;
  ASSERT_TRUE(ParseRegressions("xid", options).ok());
  EXPECT_TRUE(options.regress_on_xids);
  EXPECT_FALSE(options.regress_on_gpus);
  EXPECT_FALSE(options.regress_on_verify);
  absl::Status bad = ParseRegressions("xid,gpus", options);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("\"gpus\" is none of unhealthy-gpus, xid, verify"),
            std::string::npos)
      << bad;
  EXPECT_FALSE(ParseRegressions("", options).ok());
}

TEST(MaxUnavailableTest, CountOrPercentRoundedUp) {
  EXPECT_EQ(ParseMaxUnavailable("25%")->For(12), 3);
  EXPECT_EQ(ParseMaxUnavailable("10%")->For(12), 2);
  EXPECT_EQ(ParseMaxUnavailable("1%")->For(12), 1);
  EXPECT_EQ(ParseMaxUnavailable("4")->For(3), 4);
  for (const char* bad : {"0", "-1", "x", "150%", "%", ""}) {
    EXPECT_FALSE(ParseMaxUnavailable(bad).ok()) << bad;
  }
}

TEST(MaintenanceJobTest, RefusesWhatCannotRunAsAJob) {
  struct Case {
    const char* yaml;
    const char* field;
  } cases[] = {
      {"kind: Pod\napiVersion: v1\n", "kind"},
      {"kind: Job\napiVersion: batch/v1\nspec: {}\n", "spec.template.spec.containers"},
      {"kind: Job\napiVersion: batch/v1\nspec:\n  template:\n    spec:\n      restartPolicy: "
       "Always\n      containers: [{name: a, image: b}]\n",
       "restartPolicy"},
      {"kind: Job\napiVersion: batch/v1\nspec:\n  template:\n    spec:\n      nodeName: x\n"
       "      containers: [{name: a, image: b}]\n",
       "gpunode pins"},
      {"kind: [\n", "not YAML or JSON"},
      // YAML takes any bytes in a string; the Job sent to the API server is JSON, UTF-8 only.
      {"kind: Job\napiVersion: batch/v1\nmetadata: {labels: {team: \"\xff\xfe\"}}\nspec:\n"
       "  template:\n    spec:\n      containers: [{name: a, image: b}]\n",
       "not UTF-8"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<json> job = ParseMaintenanceJob(c.yaml, "job.yaml");
    ASSERT_FALSE(job.ok()) << c.yaml;
    EXPECT_NE(job.status().message().find("job.yaml"), std::string::npos) << job.status();
    EXPECT_NE(job.status().message().find(c.field), std::string::npos) << job.status() << c.yaml;
  }
  EXPECT_EQ(MaintenanceJobName("gpu-a.example.com"), "gpunode-upgrade-gpu-a-example-com");
  std::string long_a = MaintenanceJobName(std::string(80, 'a') + "1");
  std::string long_b = MaintenanceJobName(std::string(80, 'a') + "2");
  EXPECT_LE(long_a.size(), 63u);
  EXPECT_NE(long_a, long_b);
}

}  // namespace
}  // namespace gpunode::cluster
