#include "cluster/drain.h"

#include <map>
#include <sstream>

#include "cluster/drain_notice.h"
#include "cluster/restore.h"
#include "cluster_fixture.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "harness/gpu_cluster_objects.h"
#include "harness/simulated_env.h"
#include "kube/api_loader.h"
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
    client_ = gpunode::testing::ClientFor(*server_, env_);
    ASSERT_NE(client_, nullptr);
    options_.node = "gpu-a";
    options_.force = true;
    options_.delete_emptydir_data = true;
    options_.cordon = true;
  }

  gpunode::testing::SimulatedEnv env_{{.start = absl::FromUnixSeconds(1714986000)}};
  std::unique_ptr<ApiServerDouble> server_;
  std::unique_ptr<kube::Client> client_;
  DrainOptions options_;
  std::ostringstream out_;
};

TEST_F(DrainLiveTest, WaitsThenEvictsRespectingTheBudget) {
  options_.evict_after = absl::Minutes(1);
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
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, env_, out_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->complete()) << outcome->summary << "\n" << out_.str();
  EXPECT_NE(outcome->summary.find("1 pod(s) finished on their own, 2 evicted"), std::string::npos)
      << outcome->summary;
  std::string out = out_.str();
  EXPECT_NE(out.find("node gpu-a labelled nvidia.com/gpu.state=draining and cordoned"),
            std::string::npos);
  EXPECT_NE(out.find("waiting for 3 pod(s) on gpu-a to finish: waited 0s, oldest "
                     "ml/train-llama-6c8d7f9b5-q4x2z (running "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("), evicting in 1m: ml/train-llama-6c8d7f9b5-q4x2z, research/notebook-alice, "
                     "serving/infer-7b9d6c5f4-p2r8s"),
            std::string::npos)
      << out;
  // A DaemonSet pod is not told (it is not drained).
  std::optional<nlohmann::json> plugin_pod =
      server_->Pod("gpu-operator", "nvidia-device-plugin-daemonset-4xk9s");
  ASSERT_TRUE(plugin_pod.has_value());
  EXPECT_FALSE((*plugin_pod)["metadata"].contains("annotations"));
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
  EXPECT_GE(env_.Now() - absl::FromUnixSeconds(1714986000), absl::Minutes(1));
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
  options_.evict_after = absl::ZeroDuration();  // evict at once
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, env_, out_);
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
  options_.evict_after = absl::ZeroDuration();
  server_->SetDisruptionsAllowed("serving", "infer", 1);
  const std::string eviction = "/api/v1/namespaces/research/pods/notebook-alice/eviction";
  server_->FailNext("POST", eviction, 503, 3);
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, env_, out_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->complete()) << outcome->summary << "\n" << out_.str();
  EXPECT_EQ(server_->CountRequests("POST", eviction), 4);
  EXPECT_FALSE(server_->Pod("research", "notebook-alice").has_value());
}

// An API server that keeps failing one eviction: the others still happen, and the outcome names
// what was evicted and what was not (the command exits 1 on an incomplete drain).
TEST_F(DrainLiveTest, AnEvictionTheServerKeepsFailingEndsIncompleteNamingEachPod) {
  options_.evict_after = absl::ZeroDuration();
  server_->SetDisruptionsAllowed("serving", "infer", 1);
  const std::string eviction = "/api/v1/namespaces/research/pods/notebook-alice/eviction";
  server_->FailNext("POST", eviction, 500, 1000);
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, env_, out_);
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
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, env_, out_);
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
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, env_, out_);
  EXPECT_TRUE(absl::IsNotFound(outcome.status())) << outcome.status();
}

// The Events gpunode posted with reason NodeDraining, by "Kind/namespace/name" of the object.
std::map<std::string, std::vector<nlohmann::json>> DrainEvents(kube::Client& client) {
  std::map<std::string, std::vector<nlohmann::json>> by_object;
  absl::StatusOr<std::string> body = client.Get("/api/v1/events");
  EXPECT_TRUE(body.ok()) << body.status();
  if (!body.ok()) return by_object;
  nlohmann::json list = nlohmann::json::parse(*body);
  for (const nlohmann::json& event : list["items"]) {
    if (event.value("reason", "") != "NodeDraining") continue;
    const nlohmann::json& o = event["involvedObject"];
    by_object[o.value("kind", "") + "/" + o.value("namespace", "") + "/" + o.value("name", "")]
        .push_back(event);
  }
  return by_object;
}

// A GPU pod of a Job that a JobSet made, on gpu-a: its owners are told up the chain.
void AddJobSetPod(ApiServerDouble& server) {
  server.AddObject(gpunode::testing::JobSetJob());
  server.AddObject(
      gpunode::testing::JobSetPod("pretrain-workers-0-0-x7k2p", "gpu-a", "2024-05-06T06:00:00Z"));
}

// The safe default: GPU pods are waited for until they end, however long, and nothing holding a
// GPU is evicted; their owners are told once, and the wait says where it stands once a minute.
TEST_F(DrainLiveTest, WaitsForGpuPodsUntilTheyEndByDefault) {
  AddJobSetPod(*server_);
  const absl::Time start = env_.Now();
  server_->OnRequest([&](const ApiServerDouble::Request& r) {
    if (r.path == "/api/v1/pods" && env_.Now() - start >= absl::Hours(1)) {
      for (auto [ns, name] : {std::pair{"ml", "train-llama-6c8d7f9b5-q4x2z"},
                              {"serving", "infer-7b9d6c5f4-p2r8s"},
                              {"research", "notebook-alice"},
                              {"ml", "pretrain-workers-0-0-x7k2p"}}) {
        server_->SetPodPhase(ns, name, "Succeeded");
      }
    }
  });
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, env_, out_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->complete()) << outcome->summary;
  EXPECT_NE(outcome->summary.find("4 pod(s) finished on their own, 0 evicted"), std::string::npos)
      << outcome->summary;
  EXPECT_EQ(server_->CountRequests("POST", "/api/v1/namespaces/ml/pods/"), 0);
  EXPECT_EQ(server_->CountRequests("POST", "/api/v1/namespaces/serving/pods/"), 0);
  EXPECT_GE(env_.Now() - start, absl::Hours(1));

  // One progress line a minute (the first at once), naming the oldest pod and that nothing is
  // evicted.
  std::string out = out_.str();
  int lines = 0;
  for (size_t at = out.find("waiting for 4 pod(s)"); at != std::string::npos;
       at = out.find("waiting for 4 pod(s)", at + 1)) {
    ++lines;
  }
  EXPECT_GE(lines, 60);
  EXPECT_LE(lines, 62);
  EXPECT_NE(out.find("waiting for 4 pod(s) on gpu-a to finish: waited 30m, oldest "
                     "ml/pretrain-workers-0-0-x7k2p (running 3h30m), GPU pods are not evicted "
                     "(--evict-after sets a deadline): "),
            std::string::npos)
      << out;

  // Each GPU pod, its controller and the controller's own controller: one Event each.
  std::map<std::string, std::vector<nlohmann::json>> events = DrainEvents(*client_);
  for (const char* object :
       {"Pod/ml/train-llama-6c8d7f9b5-q4x2z", "Pod/serving/infer-7b9d6c5f4-p2r8s",
        "Pod/research/notebook-alice", "Pod/ml/pretrain-workers-0-0-x7k2p",
        "ReplicaSet/ml/train-llama-6c8d7f9b5", "ReplicaSet/serving/infer-7b9d6c5f4",
        "Job/ml/pretrain-workers-0", "JobSet/ml/pretrain"}) {
    ASSERT_EQ(events[object].size(), 1u) << object;
    const nlohmann::json& event = events[object][0];
    EXPECT_EQ(event["type"], "Warning");
    EXPECT_EQ(event["source"]["component"], "gpunode-cluster-drain");
    EXPECT_NE(event["message"].get<std::string>().find(
                  "is draining for maintenance (gpunode-cluster-drain): checkpoint and exit when "
                  "you can; its GPU pods are waited for until they end, none is evicted"),
              std::string::npos)
        << event.dump();
  }
  EXPECT_EQ(events["JobSet/ml/pretrain"][0]["involvedObject"]["apiVersion"],
            "jobset.x-k8s.io/v1alpha2");
  EXPECT_EQ(events["JobSet/ml/pretrain"][0]["involvedObject"]["uid"], "jobset-uid");
  EXPECT_EQ(events["Job/ml/pretrain-workers-0"][0]["message"],
            "a pod of this Job runs on node gpu-a, which is draining for maintenance "
            "(gpunode-cluster-drain): checkpoint and exit when you can; its GPU pods are waited "
            "for until they end, none is evicted");
  // Pods that hold no GPU, DaemonSet and static pods are not told.
  EXPECT_EQ(events.count("Pod/logging/log-shipper-5d8f7c6b9-x2k4p"), 0u);
  EXPECT_EQ(events.count("Pod/gpu-operator/nvidia-device-plugin-daemonset-4xk9s"), 0u);
  std::optional<nlohmann::json> pod = server_->Pod("ml", "pretrain-workers-0-0-x7k2p");
  ASSERT_TRUE(pod.has_value());
  EXPECT_EQ((*pod)["metadata"]["annotations"]["gpunode.io/node-draining"], "gpu-a");
  EXPECT_FALSE((*pod)["metadata"]["annotations"].contains("gpunode.io/eviction-deadline"));
}

// With a deadline, the owners are told when it falls (Event and annotation), and the GPU pods
// still running then are evicted, not before.
TEST_F(DrainLiveTest, AnEvictAfterDeadlineIsToldAndKept) {
  options_.evict_after = absl::Hours(2);
  server_->SetDisruptionsAllowed("serving", "infer", 1);
  absl::Time first_eviction = absl::InfiniteFuture();
  server_->OnRequest([&](const ApiServerDouble::Request& r) {
    if (r.method == "POST" && r.path.find("/eviction") != std::string::npos) {
      first_eviction = std::min(first_eviction, env_.Now());
    }
  });
  const absl::Time start = env_.Now();
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, env_, out_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->complete()) << outcome->summary << out_.str();
  EXPECT_EQ(first_eviction, start + absl::Hours(2));
  std::optional<nlohmann::json> pod = server_->Pod("ml", "train-llama-6c8d7f9b5-q4x2z");
  EXPECT_FALSE(pod.has_value());
  std::map<std::string, std::vector<nlohmann::json>> events = DrainEvents(*client_);
  ASSERT_EQ(events["Pod/ml/train-llama-6c8d7f9b5-q4x2z"].size(), 1u);
  EXPECT_NE(events["Pod/ml/train-llama-6c8d7f9b5-q4x2z"][0]["message"].get<std::string>().find(
                "checkpoint and exit; GPU pods still running on it at 2024-05-06T11:00:00Z are "
                "evicted"),
            std::string::npos);
  for (const ApiServerDouble::Request& r : server_->Requests()) {
    if (r.method != "PATCH" || r.path.find("/pods/") == std::string::npos) continue;
    EXPECT_EQ(
        nlohmann::json::parse(r.body)["metadata"]["annotations"]["gpunode.io/eviction-deadline"],
        "2024-05-06T11:00:00Z");
  }
}

// With --all-pods, pods that hold no GPU keep the drain's old pace (evicted after 10 minutes)
// while the GPU pods are waited for.
TEST_F(DrainLiveTest, PodsWithoutAGpuAreEvictedAfterTenMinutesWhileGpuPodsWait) {
  options_.all_pods = true;
  const absl::Time start = env_.Now();
  absl::Time shipper_evicted = absl::InfiniteFuture();
  server_->OnRequest([&](const ApiServerDouble::Request& r) {
    if (r.method == "POST" &&
        r.path.find("log-shipper-5d8f7c6b9-x2k4p/eviction") != std::string::npos) {
      shipper_evicted = std::min(shipper_evicted, env_.Now());
    }
    if (r.path == "/api/v1/pods" && env_.Now() - start >= absl::Minutes(45)) {
      for (auto [ns, name] : {std::pair{"ml", "train-llama-6c8d7f9b5-q4x2z"},
                              {"serving", "infer-7b9d6c5f4-p2r8s"},
                              {"research", "notebook-alice"}}) {
        server_->SetPodPhase(ns, name, "Succeeded");
      }
    }
  });
  absl::StatusOr<DrainOutcome> outcome = RunDrain(*client_, options_, env_, out_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->complete()) << outcome->summary << out_.str();
  EXPECT_EQ(shipper_evicted, start + absl::Minutes(10));
  EXPECT_NE(outcome->summary.find("3 pod(s) finished on their own, 1 evicted"), std::string::npos)
      << outcome->summary;
  EXPECT_NE(out_.str().find("GPU pods are not evicted (--evict-after sets a deadline), pods "
                            "without a GPU evicted in 10m"),
            std::string::npos)
      << out_.str();
}

// A second drain (or an upgrade's next pass) finds the pods told: no second Event, no second
// annotation. Requests the credentials may not make are said once, and the drain goes on.
TEST_F(DrainLiveTest, OwnersAreToldOnceAndRefusalsAreSaidOnce) {
  kube::ReadOptions read;
  read.keep_pod_details = [](const kube::PodView&) { return true; };
  DrainNotice notice{.node = "gpu-a",
                     .why = "for maintenance",
                     .component = "gpunode-cluster-drain",
                     .deadline = std::nullopt};
  auto gpu_pods = [](const kube::ClusterSnapshot& s) {
    std::vector<const kube::PodView*> pods;
    for (const kube::PodView& pod : s.pods) {
      if (pod.node_name == "gpu-a" && pod.RequestsGpus()) pods.push_back(&pod);
    }
    return pods;
  };
  kube::ApiQuery query;
  absl::StatusOr<kube::ClusterSnapshot> first = kube::LoadFromApi(*client_, query, read);
  ASSERT_TRUE(first.ok()) << first.status();
  DrainNotifier run1;
  EXPECT_TRUE(run1.Tell(*client_, gpu_pods(*first), notice, env_.Now()).empty());
  EXPECT_EQ(run1.pods_told(), 3);
  int posted = server_->CountRequests("POST", "/api/v1/namespaces/");

  absl::StatusOr<kube::ClusterSnapshot> again = kube::LoadFromApi(*client_, query, read);
  ASSERT_TRUE(again.ok());
  DrainNotifier run2;
  EXPECT_TRUE(run2.Tell(*client_, gpu_pods(*again), notice, env_.Now()).empty());
  EXPECT_EQ(run2.pods_told(), 0);
  EXPECT_EQ(server_->CountRequests("POST", "/api/v1/namespaces/"), posted);

  // A new deadline is news: told again, and a refusal is one line however many requests it hit.
  notice.deadline = env_.Now() + absl::Hours(1);
  server_->FailNext("POST", "/api/v1/namespaces/", 403, 100);
  DrainNotifier run3;
  std::vector<std::string> problems = run3.Tell(*client_, gpu_pods(*again), notice, env_.Now());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("could not post Events ("), std::string::npos) << problems[0];
  EXPECT_EQ(run3.pods_told(), 3);
  EXPECT_TRUE(run3.Tell(*client_, gpu_pods(*again), notice, env_.Now()).empty());
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
