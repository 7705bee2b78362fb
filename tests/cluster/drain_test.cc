#include "cluster/drain.h"

#include <sstream>

#include "cluster/restore.h"
#include "cluster_fixture.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "kube/snapshot_reader.h"
#include "test_support.h"

namespace gpunode::cluster {
namespace {

using gpunode::testing::ApiServerDouble;

// The planned pod named `name`; a test that asks for one the plan lacks fails here.
const PlannedPod& Planned(const DrainPlan& plan, std::string_view name) {
  for (const PlannedPod& p : plan.pods) {
    if (p.pod->name == name) return p;
  }
  ADD_FAILURE() << "the plan has no pod " << name;
  static const PlannedPod kNone{};
  return kNone;
}

TEST(DrainPlanTest, ClassifiesEveryPodOnTheNode) {
  kube::ReadOptions options;
  options.keep_pod_details = [](const kube::PodView&) { return true; };
  absl::StatusOr<kube::ClusterSnapshot> s =
      kube::ReadSnapshotFile(testing::ClusterFixture("drain.json"), options);
  ASSERT_TRUE(s.ok()) << s.status();
  DrainOptions o;
  o.node = "gpu-a";
  DrainPlan plan = PlanDrain(*s, *s->FindNode("gpu-a"), o);
  std::map<std::string, PodAction> actions;
  for (const PlannedPod& p : plan.pods) actions[std::string(p.pod->name)] = p.action;
  EXPECT_EQ(actions.size(), 6u);  // gpu-b's pod is not touched
  EXPECT_EQ(actions["train-llama-6c8d7f9b5-q4x2z"], PodAction::kDrain);
  EXPECT_EQ(actions["infer-7b9d6c5f4-p2r8s"], PodAction::kDrain);
  EXPECT_EQ(actions["notebook-alice"], PodAction::kRefuseEmptyDir);
  // Every reason, not only the first.
  EXPECT_EQ(Planned(plan, "notebook-alice").refusals,
            (std::vector<PodAction>{PodAction::kRefuseEmptyDir, PodAction::kRefuseUnmanaged}));
  EXPECT_TRUE(Planned(plan, "infer-7b9d6c5f4-p2r8s").refusals.empty());
  EXPECT_EQ(actions["log-shipper-5d8f7c6b9-x2k4p"], PodAction::kStays);
  EXPECT_EQ(actions["nvidia-device-plugin-daemonset-4xk9s"], PodAction::kSkipDaemonSet);
  EXPECT_EQ(actions["kube-proxy-gpu-a"], PodAction::kSkipMirror);
  EXPECT_TRUE(plan.Refused());
  EXPECT_EQ(Planned(plan, "infer-7b9d6c5f4-p2r8s").blocking_budget,
            "serving/infer (1 healthy, needs 1)");
  o.delete_emptydir_data = true;
  DrainPlan with_emptydir = PlanDrain(*s, *s->FindNode("gpu-a"), o);
  // It has no controller either.
  EXPECT_EQ(Planned(with_emptydir, "notebook-alice").action, PodAction::kRefuseUnmanaged);
  o.force = true;
  o.all_pods = true;
  DrainPlan all = PlanDrain(*s, *s->FindNode("gpu-a"), o);
  EXPECT_FALSE(all.Refused());
  EXPECT_EQ(Planned(all, "log-shipper-5d8f7c6b9-x2k4p").action, PodAction::kDrain);
}

// Drives RunDrain against the API double on a simulated clock: sleeping only advances time.
class DrainLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = gpunode::testing::StartPlainApiServer();
    ASSERT_NE(server_, nullptr);
    ASSERT_TRUE(server_->LoadList(testing::ClusterFixture("drain.json")));
    client_ = gpunode::testing::ClientFor(*server_);
    ASSERT_NE(client_, nullptr);
    clock_.now = [this] { return now_; };
    clock_.sleep = [this](absl::Duration d) { now_ += d; };
    options_.node = "gpu-a";
    options_.force = true;
    options_.delete_emptydir_data = true;
    options_.cordon = true;
  }

  std::unique_ptr<ApiServerDouble> server_;
  std::unique_ptr<kube::Client> client_;
  absl::Time now_ = absl::FromUnixSeconds(1714986000);
  DrainClock clock_;
  DrainOptions options_;
  std::ostringstream out_;
};

TEST_F(DrainLiveTest, WaitsThenEvictsRespectingTheBudget) {
  options_.timeout = absl::Minutes(1);
  int pod_lists = 0;
  int evictions = 0;
  server_->OnRequest([&](const ApiServerDouble::Request& r) {
    if (r.path == "/api/v1/pods" && ++pod_lists == 3) {
      server_->SetPodPhase("ml", "train-llama-6c8d7f9b5-q4x2z", "Succeeded");
    }
    if (r.path.find("infer-7b9d6c5f4-p2r8s/eviction") != std::string::npos && ++evictions == 2) {
      server_->SetDisruptionsAllowed("serving", "infer", 1);  // a replacement became ready
    }
  });
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, clock_, out_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->complete()) << outcome->summary << "\n" << out_.str();
  EXPECT_NE(outcome->summary.find("1 pod(s) finished on their own, 2 evicted"), std::string::npos)
      << outcome->summary;
  std::string out = out_.str();
  EXPECT_NE(out.find("node gpu-a labelled nvidia.com/gpu.state=draining and cordoned"),
            std::string::npos);
  EXPECT_NE(out.find("waiting for 3 pod(s) on gpu-a to finish (evicting in 1m)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("cannot evict serving/infer-7b9d6c5f4-p2r8s yet: Cannot evict pod as it "
                     "would violate the pod's disruption budget. (The disruption budget infer "
                     "needs 1 healthy pods and has 1 currently)"),
            std::string::npos)
      << out;
  std::optional<nlohmann::json> node = server_->Node("gpu-a");
  EXPECT_EQ((*node)["metadata"]["labels"]["nvidia.com/gpu.state"], "draining");
  EXPECT_TRUE((*node)["spec"]["unschedulable"].get<bool>());
  EXPECT_TRUE((*node)["metadata"]["annotations"].contains("gpunode.io/drain-started-at"));
  // The drain set this cordon, so restore may lift it.
  EXPECT_EQ((*node)["metadata"]["annotations"]["gpunode.io/drain-cordoned"], "true");
  EXPECT_FALSE(server_->Pod("serving", "infer-7b9d6c5f4-p2r8s").has_value());
  EXPECT_FALSE(server_->Pod("research", "notebook-alice").has_value());
  // DaemonSet, static and CPU pods stay.
  EXPECT_TRUE(server_->Pod("gpu-operator", "nvidia-device-plugin-daemonset-4xk9s").has_value());
  EXPECT_TRUE(server_->Pod("logging", "log-shipper-5d8f7c6b9-x2k4p").has_value());
  // The waiting used the whole --timeout before evicting.
  EXPECT_GE(now_ - absl::FromUnixSeconds(1714986000), absl::Minutes(1));
  int patches = 0;
  for (const ApiServerDouble::Request& r : server_->Requests()) {
    if (r.method == "PATCH") {
      ++patches;
      EXPECT_EQ(r.content_type, "application/merge-patch+json");
    }
    if (r.path == "/api/v1/pods") {
      EXPECT_EQ(r.query.at("fieldSelector"), "spec.nodeName=gpu-a");
    }
  }
  EXPECT_GT(patches, 0);    // the cordon and the annotations
  EXPECT_GE(pod_lists, 3);  // the node's pods, listed by field selector while waiting
}

TEST_F(DrainLiveTest, ABudgetThatNeverAllowsItEndsIncompleteNamingIt) {
  options_.timeout = absl::ZeroDuration();  // evict at once
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, clock_, out_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_FALSE(outcome->complete());
  EXPECT_EQ(outcome->end, DrainOutcome::End::kPodsRemain);
  EXPECT_NE(outcome->summary.find("still blocked after 5m: serving/infer-7b9d6c5f4-p2r8s: "
                                  "Cannot evict pod"),
            std::string::npos)
      << outcome->summary;
  EXPECT_NE(outcome->summary.find("The disruption budget infer needs 1 healthy pods"),
            std::string::npos);
  // kubectl drain's pace: one attempt every 5 s for 5 minutes.
  EXPECT_GE(server_->CountRequests("POST", "/api/v1/namespaces/serving/pods/infer"), 50);
}

// An eviction is idempotent: a burst of 5xx is retried with backoff and the drain completes.
TEST_F(DrainLiveTest, ABurstOfServerErrorsOnAnEvictionIsRetried) {
  options_.timeout = absl::ZeroDuration();
  server_->SetDisruptionsAllowed("serving", "infer", 1);
  const std::string eviction = "/api/v1/namespaces/research/pods/notebook-alice/eviction";
  server_->FailNext("POST", eviction, 503, 3);
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, clock_, out_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->complete()) << outcome->summary << "\n" << out_.str();
  EXPECT_EQ(server_->CountRequests("POST", eviction), 4);
  EXPECT_FALSE(server_->Pod("research", "notebook-alice").has_value());
}

// An API server that keeps failing one eviction: the others still happen, and the outcome names
// what was evicted and what was not (the command exits 1 on an incomplete drain).
TEST_F(DrainLiveTest, AnEvictionTheServerKeepsFailingEndsIncompleteNamingEachPod) {
  options_.timeout = absl::ZeroDuration();
  server_->SetDisruptionsAllowed("serving", "infer", 1);
  const std::string eviction = "/api/v1/namespaces/research/pods/notebook-alice/eviction";
  server_->FailNext("POST", eviction, 500, 1000);
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, clock_, out_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_FALSE(outcome->complete());
  EXPECT_EQ(server_->CountRequests("POST", eviction), 5);
  EXPECT_NE(outcome->summary.find("evicted: ml/train-llama-6c8d7f9b5-q4x2z, "
                                  "serving/infer-7b9d6c5f4-p2r8s;"),
            std::string::npos)
      << outcome->summary;
  EXPECT_NE(outcome->summary.find("not evicted, the API server failed: research/notebook-alice: "
                                  "HTTP 500"),
            std::string::npos)
      << outcome->summary;
  EXPECT_NE(outcome->summary.find("(after 5 attempts)"), std::string::npos) << outcome->summary;
  EXPECT_TRUE(server_->Pod("research", "notebook-alice").has_value());
  EXPECT_FALSE(server_->Pod("serving", "infer-7b9d6c5f4-p2r8s").has_value());
  std::optional<nlohmann::json> node = server_->Node("gpu-a");
  EXPECT_EQ((*node)["metadata"]["labels"]["nvidia.com/gpu.state"], "draining");
}

TEST_F(DrainLiveTest, RefusesBeforeChangingAnything) {
  options_.force = false;
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, clock_, out_);
  ASSERT_TRUE(outcome.ok());
  EXPECT_FALSE(outcome->complete());
  EXPECT_EQ(outcome->end, DrainOutcome::End::kRefused);
  EXPECT_NE(outcome->summary.find("research/notebook-alice have no controller to recreate them "
                                  "(pass --force)"),
            std::string::npos)
      << outcome->summary;
  EXPECT_EQ(server_->CountRequests("PATCH", "/"), 0);
  EXPECT_EQ(server_->CountRequests("POST", "/"), 0);
}

TEST_F(DrainLiveTest, UnknownNodeIsAnError) {
  options_.node = "gpu-z";
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, clock_, out_);
  EXPECT_TRUE(absl::IsNotFound(outcome.status())) << outcome.status();
}

TEST(RestoreCheckTest, ComparesCapacityWithThePhysicalCount) {
  absl::StatusOr<kube::ClusterSnapshot> s =
      kube::ReadSnapshotFile(testing::ClusterFixture("restore.json"));
  ASSERT_TRUE(s.ok());
  RestoreCheck ok = CheckRestore(*s->FindNode("gpu-ok"));
  EXPECT_TRUE(ok.ok);
  RestoreCheck short_one = CheckRestore(*s->FindNode("gpu-short"));
  EXPECT_FALSE(short_one.ok);
  EXPECT_NE(short_one.message.find("node gpu-short has 7 healthy nvidia.com/gpu (allocatable; "
                                   "capacity 7) of 8 (nvidia.com/gpu.count=8)"),
            std::string::npos)
      << short_one.message;
  RestoreCheck unlabelled = CheckRestore(*s->FindNode("gpu-nolabel"));
  EXPECT_FALSE(unlabelled.ok);
  EXPECT_NE(unlabelled.message.find("has no GPU count label"), std::string::npos);
}

}  // namespace
}  // namespace gpunode::cluster
