#include "cluster/audit.h"

#include "build_paths.h"
#include "cluster/gpu_count.h"
#include "cluster/report.h"
#include "gtest/gtest.h"
#include "kube/snapshot_reader.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {
namespace {

AuditReport AuditFixture(const std::string& name) {
  absl::StatusOr<kube::ClusterSnapshot> s =
      kube::ReadSnapshotFile(std::string(build_paths::kClusterFixtures) + "/" + name);
  EXPECT_TRUE(s.ok()) << s.status();
  return Audit(*s);
}

std::vector<std::string> Ids(const AuditReport& r) {
  std::vector<std::string> ids;
  for (const Finding& f : r.findings) ids.push_back(f.id);
  return ids;
}

using Ids_ = std::vector<std::string>;

// gpu.missing explains why the operator's count is above GFD's; any other gap, or a value that
// does not read, is still a disagreement.
TEST(ExpectedGpusTest, TheMissingLabelExplainsTheGapBetweenTheCounts) {
  auto expected = [](kube::Labels labels, const CountLabel& label = {}) {
    kube::NodeView node;
    node.name = "gpu-a";
    node.labels = std::move(labels);
    return ExpectedGpusOf(node, label);
  };
  ExpectedGpus lost = expected({{"gpu.count", "8"},
                                {"nvidia.com/gpu.count", "7"},
                                {"feature.node.kubernetes.io/gpu.missing", "b3-00.0"}});
  EXPECT_FALSE(lost.LabelsDisagree());
  EXPECT_EQ(lost.count, 8);
  EXPECT_EQ(lost.MissingText(),
            "missing GPU: 0000:b3:00.0 (feature.node.kubernetes.io/gpu.missing=b3-00.0)");

  ExpectedGpus gap =
      expected({{"gpu.count", "8"}, {"nvidia.com/gpu.count", "6"}, {"gpu.missing", "b3-00.0"}});
  EXPECT_TRUE(gap.LabelsDisagree());
  EXPECT_EQ(gap.Disagreement(),
            "the GPU count labels disagree: gpu.count=8, nvidia.com/gpu.count=6, "
            "gpu.missing=b3-00.0");

  ExpectedGpus bad = expected({{"gpu.count", "8"}, {"gpu.missing", "slot 3"}});
  EXPECT_TRUE(bad.LabelsDisagree());
  EXPECT_NE(bad.Disagreement().find("the label gpu.missing=slot 3 does not read: \"slot 3\" is "
                                    "neither a PCI address"),
            std::string::npos)
      << bad.Disagreement();

  // Under a prefix, only the prefixed key counts.
  CountLabel prefixed{.key = "gpu.count", .prefix = "example.com/"};
  ExpectedGpus other =
      expected({{"example.com/gpu.count", "2"}, {"gpu.missing", "17-00.0"}}, prefixed);
  EXPECT_TRUE(other.missing.empty());
  ExpectedGpus mine = expected(
      {{"example.com/gpu.count", "2"}, {"example.com/gpu.missing", "17-00.0_0001-b3-00.0_2-more"}},
      prefixed);
  EXPECT_EQ(mine.MissingText(),
            "missing GPUs: 0000:17:00.0, 0001:b3:00.0 and 2 more "
            "(example.com/gpu.missing=17-00.0_0001-b3-00.0_2-more)");
}

TEST(AuditTest, HealthyClusterHasNoFindings) {
  AuditReport r = AuditFixture("healthy.json");
  EXPECT_EQ(Ids(r), Ids_{});
  ASSERT_EQ(r.nodes.size(), 2u);  // the CPU node is not a GPU node
  const NodeSummary& a = r.nodes[0];
  EXPECT_EQ(a.name, "gpu-a");
  EXPECT_EQ(a.Gpu().capacity, 8000);
  EXPECT_EQ(a.Gpu().requested, 6000);
  EXPECT_EQ(a.Gpu().Free(), 2000);
  EXPECT_EQ(a.gpu_pods, 2);
  // The Succeeded job on gpu-b holds nothing.
  EXPECT_EQ(r.nodes[1].Gpu().requested, 1000);
}

TEST(AuditTest, EachFindingHasItsFixture) {
  struct Case {
    const char* fixture;
    Ids_ ids;
  } cases[] = {
      {"gpu-unhealthy.json", {"gpu-unhealthy"}},
      {"gpu-count-mismatch.json", {"gpu-count-mismatch"}},
      {"zombie-pods.json", {"zombie-pod", "zombie-pod", "zombie-pod"}},
      {"gpu-accounting-leak.json", {"gpu-accounting-leak"}},
      {"gpu-node-untainted.json", {"gpu-node-untainted"}},
      {"cpu-pods-on-gpu-node.json", {"cpu-pods-on-gpu-node"}},
      {"draining-node-new-gpu-pods.json", {"draining-node-new-gpu-pods"}},
      {"mig-and-shared.json", {}},
  };
  for (const Case& c : cases) EXPECT_EQ(Ids(AuditFixture(c.fixture)), c.ids) << c.fixture;
}

TEST(AuditTest, MessagesCarryTheNumbersAndTheFix) {
  AuditReport unhealthy = AuditFixture("gpu-unhealthy.json");
  ASSERT_EQ(unhealthy.findings.size(), 1u);
  EXPECT_EQ(unhealthy.findings[0].severity, Severity::kError);
  EXPECT_EQ(unhealthy.findings[0].object, "node/gpu-a");
  EXPECT_EQ(unhealthy.findings[0].message,
            "node gpu-a: 2 of 8 nvidia.com/gpu are unhealthy (capacity 8, allocatable 6)");

  AuditReport zombies = AuditFixture("zombie-pods.json");
  std::vector<std::string> objects;
  for (const Finding& f : zombies.findings) objects.push_back(f.object);
  EXPECT_EQ(objects,
            (Ids_{"pod/ml/train-llama-6c8d7f9b5-m8w3t", "pod/ml/train-llama-6c8d7f9b5-q4x2z",
                  "pod/serving/infer-7b9d6c5f4-p2r8s"}));
  EXPECT_NE(zombies.findings[0].message.find("terminating since 2024-05-06T09:30:00Z"),
            std::string::npos);
  EXPECT_NE(zombies.findings[1].message.find("in phase Unknown"), std::string::npos);
  EXPECT_NE(zombies.findings[2].message.find("its node gpu-b is NotReady"), std::string::npos);
  EXPECT_NE(zombies.findings[1].fix.find(
                "kubectl delete pod -n ml train-llama-6c8d7f9b5-q4x2z --grace-period=0 --force"),
            std::string::npos);

  AuditReport leak = AuditFixture("gpu-accounting-leak.json");
  EXPECT_EQ(leak.findings[0].message,
            "node gpu-a: active pods request 10 nvidia.com/gpu but only 8 are allocatable");

  AuditReport cpu = AuditFixture("cpu-pods-on-gpu-node.json");
  EXPECT_EQ(cpu.findings[0].severity, Severity::kWarning);
  // The device plugin DaemonSet pod is expected on GPU nodes and is not named.
  EXPECT_NE(cpu.findings[0].message.find("1 pod(s) that request no GPU run on GPU node gpu-a: "
                                         "logging/log-shipper-5d8f7c6b9-x2k4p"),
            std::string::npos);

  AuditReport draining = AuditFixture("draining-node-new-gpu-pods.json");
  EXPECT_NE(draining.findings[0].message.find("1 new GPU pod(s): ml/train-mistral-84f6d9c7b-z9v2k"),
            std::string::npos);
}

TEST(AuditTest, OtherNvidiaResourcesAreCountedPerResource) {
  AuditReport r = AuditFixture("mig-and-shared.json");
  ASSERT_EQ(r.nodes.size(), 2u);
  const NodeSummary& mig = r.nodes[0];
  ASSERT_EQ(mig.resources.size(), 2u);
  EXPECT_EQ(mig.resources[0].resource, "nvidia.com/gpu");
  EXPECT_EQ(mig.resources[1].resource, "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(mig.resources[1].requested, 2000);
  // Time-slicing: 4 GPUs x 4 replicas = 16 advertised, which is not a mismatch.
  EXPECT_EQ(r.nodes[1].Gpu().capacity, 16000);
}

TEST(AuditTest, JsonHasStableKeys) {
  nlohmann::json j = nlohmann::json::parse(AuditJson(AuditFixture("gpu-unhealthy.json")));
  ASSERT_EQ(j["nodes"].size(), 1u);
  const nlohmann::json& n = j["nodes"][0];
  for (const char* key : {"name", "ready", "unschedulable", "gpu_state", "gpu_count", "capacity",
                          "allocatable", "requested", "free", "gpu_pods", "resources"}) {
    EXPECT_TRUE(n.contains(key)) << key;
  }
  EXPECT_EQ(n["capacity"], 8);
  EXPECT_EQ(n["allocatable"], 6);
  EXPECT_EQ(n["free"], 2);
  EXPECT_TRUE(n["gpu_state"].is_null());
  const nlohmann::json& f = j["findings"][0];
  EXPECT_EQ(f["id"], "gpu-unhealthy");
  EXPECT_EQ(f["severity"], "error");
  for (const char* key : {"id", "severity", "object", "message", "fix"}) {
    EXPECT_TRUE(f.contains(key)) << key;
  }
  EXPECT_EQ(j["summary"]["errors"], 1);
}

}  // namespace
}  // namespace gpunode::cluster
