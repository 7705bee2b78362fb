#include "cluster/why_pending.h"

#include "build_paths.h"
#include "cluster/scheduling.h"
#include "gtest/gtest.h"
#include "kube/snapshot_reader.h"

namespace gpunode::cluster {
namespace {

PendingReport Explain(const std::string& fixture, const std::string& pod) {
  kube::ReadOptions options;
  options.keep_pod_details = [&](const kube::PodView& p) { return p.name == pod; };
  absl::StatusOr<kube::ClusterSnapshot> s =
      kube::ReadSnapshotFile(std::string(build_paths::kClusterFixtures) + "/" + fixture, options);
  EXPECT_TRUE(s.ok()) << s.status();
  absl::StatusOr<PendingReport> r = WhyPending(*s, "ml", pod);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : PendingReport{};
}

const NodeFit& NodeOf(const PendingReport& r, std::string_view name) {
  for (const NodeFit& n : r.nodes) {
    if (n.node == name) return n;
  }
  ADD_FAILURE() << "no node " << name;
  static NodeFit none;
  return none;
}

TEST(WhyPendingTest, InsufficientGpusMeansWaiting) {
  PendingReport r = Explain("pending-insufficient.json", "finetune-0");
  EXPECT_EQ(r.verdict.code, "wait");
  EXPECT_FALSE(r.Failed());
  const NodeFit& a = NodeOf(r, "gpu-a");
  ASSERT_EQ(a.reasons.size(), 1u);
  EXPECT_EQ(a.reasons[0].code, "insufficient");
  EXPECT_EQ(a.reasons[0].message, "Insufficient nvidia.com/gpu (wanted 4, free 2)");
  EXPECT_TRUE(a.reasons[0].temporary);
  EXPECT_EQ(NodeOf(r, "cpu-1").reasons[0].message,
            "Insufficient nvidia.com/gpu (wanted 4; the node has no nvidia.com/gpu)");
  EXPECT_EQ(r.scheduler_message, "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
  EXPECT_NE(r.recorded_message.find("2 Insufficient nvidia.com/gpu"), std::string::npos);
}

TEST(WhyPendingTest, UntoleratedTaintInTheSchedulersWords) {
  PendingReport r = Explain("pending-taint.json", "finetune-0");
  EXPECT_EQ(r.verdict.code, "never");
  EXPECT_TRUE(r.Failed());
  EXPECT_EQ(NodeOf(r, "gpu-a").reasons[0].code, "untolerated-taint");
  EXPECT_EQ(NodeOf(r, "gpu-a").reasons[0].message,
            "node(s) had untolerated taint {dedicated: inference} (effect NoSchedule; add a "
            "toleration for key dedicated)");
  EXPECT_EQ(NodeOf(r, "gpu-a").scheduler_reason, "node(s) had untolerated taint(s)");
  EXPECT_EQ(r.scheduler_message,
            "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated "
            "taint(s).");
}

// The scheduler's words, then which selector or term failed: the key, the value wanted and the
// node's.
TEST(WhyPendingTest, SelectorAndAffinityMismatchNameTheKeyAndBothValues) {
  PendingReport r = Explain("pending-affinity.json", "finetune-0");
  EXPECT_EQ(r.verdict.code, "never");
  EXPECT_EQ(
      NodeOf(r, "gpu-a").reasons[0].message,
      "node(s) didn't match Pod's node affinity/selector (nodeSelector "
      "nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB: the node has \"NVIDIA-H100-80GB-HBM3\")");
  EXPECT_EQ(
      NodeOf(r, "cpu-1").reasons[0].message,
      "node(s) didn't match Pod's node affinity/selector (nodeSelector "
      "nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB: the node has no nvidia.com/gpu.product)");
  EXPECT_EQ(NodeOf(r, "gpu-a").scheduler_reason,
            "node(s) didn't match Pod's node affinity/selector");
  EXPECT_EQ(r.scheduler_message,
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.");

  r = Explain("pending-affinity.json", "eval-0");
  EXPECT_EQ(NodeOf(r, "gpu-a").reasons[0].message,
            "node(s) didn't match Pod's node affinity/selector (affinity term 1: "
            "topology.kubernetes.io/zone In [us-west-2b]: the node has \"us-east-1a\")");
}

// Near misses an operator makes are named as such: a value or key that is a likely typo of one
// the nodes have, and a toleration of the wrong key, effect or value.
TEST(WhyPendingTest, NearMissesAreNamed) {
  auto reason = [](const std::string& pod) {
    return NodeOf(Explain("pending-near-miss.json", pod), "gpu-a").reasons.at(0).message;
  };
  EXPECT_EQ(reason("value-typo"),
            "node(s) didn't match Pod's node affinity/selector (nodeSelector accelerator=a10: the "
            "node has \"nvidia-a10\", likely the value meant)");
  EXPECT_EQ(reason("key-typo"),
            "node(s) didn't match Pod's node affinity/selector (nodeSelector "
            "nvidia.com/gpu.produt=NVIDIA-H100-80GB-HBM3: the node has no nvidia.com/gpu.produt; "
            "did you mean the node's nvidia.com/gpu.product?)");
  EXPECT_EQ(reason("toleration-key"),
            "node(s) had untolerated taint {nvidia.com/gpu: present} (effect NoSchedule; the pod "
            "tolerates key nvidia, not nvidia.com/gpu)");
  EXPECT_EQ(reason("toleration-effect"),
            "node(s) had untolerated taint {nvidia.com/gpu: present} (effect NoSchedule; the pod's "
            "toleration for nvidia.com/gpu has effect NoExecute, the taint's is NoSchedule)");
  EXPECT_EQ(reason("toleration-value"),
            "node(s) had untolerated taint {nvidia.com/gpu: present} (effect NoSchedule; the pod "
            "tolerates nvidia.com/gpu=\"true\", the taint's value is \"present\"; use operator "
            "Exists for any value)");
}

TEST(WhyPendingTest, LargerThanAnyNodeNeverFits) {
  PendingReport r = Explain("pending-too-large.json", "pretrain-0");
  EXPECT_EQ(r.verdict.code, "never");
  EXPECT_NE(r.verdict.message.find("requests 16 nvidia.com/gpu but the largest node has 8; no "
                                   "amount of waiting helps"),
            std::string::npos);
  EXPECT_EQ(NodeOf(r, "gpu-a").reasons[0].code, "exceeds-node-capacity");
}

TEST(WhyPendingTest, RequestsMustEqualIntegerLimits) {
  PendingReport r = Explain("pending-requests-limits.json", "finetune-0");
  EXPECT_EQ(r.verdict.code, "invalid");
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].message,
            "spec.containers[0].resources.requests: Invalid value: \"2\": must be equal to "
            "nvidia.com/gpu limit of 1");
  PendingReport frac = Explain("pending-requests-limits.json", "notebook-0");
  ASSERT_EQ(frac.problems.size(), 1u);
  EXPECT_EQ(frac.problems[0].message,
            "spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: \"500m\": must "
            "be an integer");
}

TEST(WhyPendingTest, CordonedNodeAndFitsNow) {
  PendingReport cordoned = Explain("pending-unschedulable.json", "finetune-0");
  EXPECT_EQ(cordoned.verdict.code, "wait");
  const NodeFit& a = NodeOf(cordoned, "gpu-a");
  ASSERT_EQ(a.reasons.size(), 1u);  // the cordon taint is not reported twice
  EXPECT_EQ(a.reasons[0].code, "unschedulable");
  EXPECT_EQ(a.scheduler_reason, "node(s) were unschedulable");

  PendingReport fits = Explain("pending-fits.json", "finetune-0");
  EXPECT_EQ(fits.verdict.code, "fits-now");
  EXPECT_TRUE(NodeOf(fits, "gpu-a").reasons.empty());
}

TEST(WhyPendingTest, RunningAndMissingPods) {
  kube::ReadOptions options;
  options.keep_pod_details = [](const kube::PodView&) { return true; };
  absl::StatusOr<kube::ClusterSnapshot> s =
      kube::ReadSnapshotFile(std::string(build_paths::kClusterFixtures) + "/healthy.json", options);
  ASSERT_TRUE(s.ok());
  absl::StatusOr<PendingReport> running = WhyPending(*s, "ml", "train-llama-6c8d7f9b5-q4x2z");
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->verdict.code, "not-pending");
  EXPECT_TRUE(absl::IsNotFound(WhyPending(*s, "ml", "ghost").status()));
}

kube::Toleration Tol(std::string_view key, std::string_view op, std::string_view value,
                     std::string_view effect) {
  kube::Toleration t;
  t.key = key;
  t.op = op;
  t.value = value;
  t.effect = effect;
  return t;
}

// Node selection as kube-scheduler evaluates it, and the words for what fails: terms are ORed,
// the requirements of a term ANDed, an empty term (or none) matches nothing.
TEST(SchedulingTest, NodeSelectionMatchesAndSaysWhatFails) {
  kube::NodeView node;
  node.name = "gpu-a";
  node.labels = {{"zone", "a"}, {"gpus", "8"}};
  std::vector<kube::NodeView> nodes = {node};
  kube::PodDetails pod;
  pod.has_required_node_affinity = true;
  kube::NodeSelectorTerm other_zone{.match_expressions = {{"zone", "In", {"b"}}},
                                    .match_fields = {}};
  kube::NodeSelectorTerm many_gpus{
      .match_expressions = {{"zone", "Exists", {}}, {"gpus", "Gt", {"4"}}}, .match_fields = {}};
  pod.required_node_affinity = {other_zone, many_gpus};
  EXPECT_TRUE(MatchesNodeSelectorAndAffinity(pod, node));
  EXPECT_EQ(NodeSelectionMismatch(pod, node, nodes), "");

  pod.required_node_affinity = {other_zone, kube::NodeSelectorTerm{}};
  EXPECT_FALSE(MatchesNodeSelectorAndAffinity(pod, node));
  EXPECT_EQ(NodeSelectionMismatch(pod, node, nodes),
            "affinity term 1: zone In [b]: the node has \"a\"; affinity term 2: an empty term "
            "matches no node");
  pod.required_node_affinity = {kube::NodeSelectorTerm{
      .match_expressions = {}, .match_fields = {{"metadata.name", "NotIn", {"gpu-a"}}}}};
  EXPECT_FALSE(MatchesNodeSelectorAndAffinity(pod, node));
  EXPECT_EQ(NodeSelectionMismatch(pod, node, nodes),
            "affinity term 1: metadata.name NotIn [gpu-a]: the node has \"gpu-a\"");
  pod.required_node_affinity.clear();
  EXPECT_FALSE(MatchesNodeSelectorAndAffinity(pod, node));
  EXPECT_EQ(NodeSelectionMismatch(pod, node, nodes),
            "the required node affinity has no term, which matches no node");

  pod.has_required_node_affinity = false;
  pod.node_selector = {{"zone", "a"}, {"gpu", "yes"}};
  EXPECT_FALSE(MatchesNodeSelectorAndAffinity(pod, node));
  EXPECT_EQ(NodeSelectionMismatch(pod, node, nodes),
            "nodeSelector gpu=yes: the node has no gpu; did you mean the node's gpus?");
}

TEST(SchedulingTest, TolerationsMatchLikeTheScheduler) {
  kube::Taint gpu{"nvidia.com/gpu", "present", "NoSchedule"};
  EXPECT_TRUE(Tolerates(Tol("nvidia.com/gpu", "Exists", "", "NoSchedule"), gpu));
  EXPECT_TRUE(Tolerates(Tol("nvidia.com/gpu", "Exists", "", ""), gpu));
  EXPECT_TRUE(Tolerates(Tol("", "Exists", "", ""), gpu));
  EXPECT_TRUE(Tolerates(Tol("nvidia.com/gpu", "", "present", "NoSchedule"), gpu));
  EXPECT_FALSE(Tolerates(Tol("nvidia.com/gpu", "Equal", "true", "NoSchedule"), gpu));
  EXPECT_FALSE(Tolerates(Tol("nvidia.com/gpu", "Exists", "", "NoExecute"), gpu));
  EXPECT_FALSE(Tolerates(Tol("", "Equal", "", ""), gpu));
  kube::NodeView node;
  node.taints = {gpu, {"soft", "x", "PreferNoSchedule"}};
  EXPECT_EQ(UntoleratedTaints({}, node).size(), 1u);  // PreferNoSchedule never filters
  EXPECT_EQ(TaintText({"node-role.kubernetes.io/control-plane", "", "NoSchedule"}),
            "{node-role.kubernetes.io/control-plane: }");
}

}  // namespace
}  // namespace gpunode::cluster
