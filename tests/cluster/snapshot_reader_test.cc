#include "kube/snapshot_reader.h"

#include "gtest/gtest.h"
#include "kube/gpu_resources.h"
#include "test_support.h"

namespace gpunode::kube {
namespace {

std::string Fixture(const std::string& name) { return std::string(CLUSTER_FIXTURES) + "/" + name; }

std::string Message(const absl::Status& st) { return std::string(st.message()); }

TEST(SnapshotReaderTest, ReadsAKubectlList) {
  absl::StatusOr<ClusterSnapshot> s = ReadSnapshotFile(Fixture("healthy.json"));
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->nodes.size(), 3u);
  EXPECT_EQ(s->pods.size(), 8u);
  EXPECT_EQ(s->pdbs.size(), 1u);
  EXPECT_TRUE(s->has_pdbs);
  const NodeView* a = s->FindNode("gpu-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(MilliOf(a->capacity, kGpuResource), 8000);
  EXPECT_EQ(MilliOf(a->allocatable, kGpuResource), 8000);
  EXPECT_EQ(FindLabel(a->labels, kGpuCountLabel), std::optional<std::string_view>("8"));
  EXPECT_EQ(a->ready, ConditionStatus::kTrue);
  ASSERT_FALSE(a->taints.empty());
  EXPECT_EQ(a->taints[0].key, "nvidia.com/gpu");
  const NodeView* cpu = s->FindNode("cpu-1");
  ASSERT_NE(cpu, nullptr);
  EXPECT_TRUE(cpu->capacity.empty());  // cpu and memory are not kept

  const PodView* train = s->FindPod("ml", "train-llama-6c8d7f9b5-q4x2z");
  ASSERT_NE(train, nullptr);
  EXPECT_EQ(train->node_name, "gpu-a");
  EXPECT_EQ(train->phase, PodPhase::kRunning);
  EXPECT_EQ(MilliOf(train->gpu_requests, kGpuResource), 4000);
  EXPECT_TRUE(train->has_controller);
  EXPECT_EQ(train->details, nullptr);  // audit keeps no details
  const PodView* plugin = s->FindPod("gpu-operator", "nvidia-device-plugin-daemonset-4xk9s");
  ASSERT_NE(plugin, nullptr);
  EXPECT_TRUE(plugin->daemonset);
  const PodView* proxy = s->FindPod("kube-system", "kube-proxy-gpu-a");
  ASSERT_NE(proxy, nullptr);
  EXPECT_TRUE(proxy->mirror);
}

TEST(SnapshotReaderTest, KeepsDetailsOnlyForChosenPods) {
  ReadOptions options;
  options.keep_pod_details = [](const PodView& p) { return p.name == "eval-0"; };
  absl::StatusOr<ClusterSnapshot> s = ReadSnapshotFile(Fixture("pending-affinity.json"), options);
  ASSERT_TRUE(s.ok()) << s.status();
  const PodView* eval = s->FindPod("ml", "eval-0");
  ASSERT_NE(eval, nullptr);
  ASSERT_NE(eval->details, nullptr);
  EXPECT_TRUE(eval->details->has_required_node_affinity);
  ASSERT_EQ(eval->details->required_node_affinity.size(), 1u);
  const NodeSelectorRequirement& req =
      eval->details->required_node_affinity[0].match_expressions.at(0);
  EXPECT_EQ(req.key, "topology.kubernetes.io/zone");
  EXPECT_EQ(req.op, "In");
  EXPECT_EQ(req.values, std::vector<std::string_view>{"us-west-2b"});
  EXPECT_TRUE(eval->details->tolerations_present);
  EXPECT_FALSE(eval->details->unschedulable_message.empty());
  EXPECT_EQ(s->FindPod("ml", "finetune-0")->details, nullptr);
}

TEST(SnapshotReaderTest, ApiListPagesWithoutItemKindsAndContinueTokens) {
  std::string page = R"({"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"9",
    "continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ","remainingItemCount":3},
    "items":[{"metadata":{"name":"n1","labels":{"nvidia.com/gpu.count":"2"}},
              "status":{"capacity":{"nvidia.com/gpu":"2","cpu":"8"},"allocatable":{"nvidia.com/gpu":"2"}}}]})";
  simdjson::padded_string padded(page);
  SnapshotBuilder builder;
  std::string token;
  ASSERT_TRUE(builder.Add(padded, "page 1", &token).ok());
  EXPECT_EQ(token, "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ");
  std::string last = R"({"kind":"PodList","apiVersion":"v1","metadata":{},"items":[
    {"metadata":{"name":"p","namespace":"x"},"spec":{"nodeName":"n1","containers":[
      {"name":"a","resources":{"limits":{"nvidia.com/gpu":"1"}}}]},"status":{"phase":"Running"}}]})";
  simdjson::padded_string padded_last(last);
  ASSERT_TRUE(builder.Add(padded_last, "page 2", &token).ok());
  EXPECT_EQ(token, "");
  ClusterSnapshot s = builder.Take();
  ASSERT_EQ(s.nodes.size(), 1u);
  ASSERT_EQ(s.pods.size(), 1u);
  // Limits stand in for requests, as API defaulting makes them.
  EXPECT_EQ(MilliOf(s.pods[0].gpu_requests, kGpuResource), 1000);
}

TEST(SnapshotReaderTest, EffectiveRequestFollowsTheScheduler) {
  // max(sum of app containers + sidecars, largest init container + sidecars started before it)
  std::string pod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"x"},
    "spec":{"initContainers":[
        {"name":"big-init","resources":{"requests":{"nvidia.com/gpu":"3"},"limits":{"nvidia.com/gpu":"3"}}},
        {"name":"sidecar","restartPolicy":"Always","resources":{"limits":{"nvidia.com/gpu":"1"}}}],
      "containers":[
        {"name":"a","resources":{"limits":{"nvidia.com/gpu":"1","nvidia.com/mig-1g.10gb":"2"}}},
        {"name":"b","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})";
  absl::StatusOr<ClusterSnapshot> s = ReadSnapshotText(pod, "pod.json");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(MilliOf(s->pods[0].gpu_requests, kGpuResource), 3000);
  EXPECT_EQ(MilliOf(s->pods[0].gpu_requests, "nvidia.com/mig-1g.10gb"), 2000);
  // A pod without a status is Pending (as at admission).
  EXPECT_EQ(s->pods[0].phase, PodPhase::kPending);

  std::string sidecars = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"x"},
    "spec":{"initContainers":[
        {"name":"sidecar","restartPolicy":"Always","resources":{"limits":{"nvidia.com/gpu":"2"}}}],
      "containers":[{"name":"a","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})";
  s = ReadSnapshotText(sidecars, "pod.json");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(MilliOf(s->pods[0].gpu_requests, kGpuResource), 3000);
}

TEST(SnapshotReaderTest, SortedKeysPutTheListKindAfterItemsWithoutKinds) {
  // What a tool that sorts keys (jq -S, Python's sort_keys) makes of an API list page.
  std::string page = R"({"apiVersion":"v1","items":[
      {"metadata":{"name":"n1"},"status":{"capacity":{"nvidia.com/gpu":"2"}}},
      {"metadata":{"name":"n2"},"status":{"capacity":{"nvidia.com/gpu":"4"}}}],
    "kind":"NodeList","metadata":{"resourceVersion":"7"}})";
  absl::StatusOr<ClusterSnapshot> s = ReadSnapshotText(page, "sorted.json");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->nodes.size(), 2u);
  EXPECT_EQ(MilliOf(s->nodes[1].capacity, kGpuResource), 4000);
  absl::StatusOr<ClusterSnapshot> no_kind =
      ReadSnapshotText(R"({"apiVersion":"v1","items":[{"metadata":{"name":"x"}}]})", "k.json");
  ASSERT_FALSE(no_kind.ok());
  EXPECT_NE(Message(no_kind.status()).find("k.json: items[0] (item): kind: missing"),
            std::string::npos)
      << no_kind.status();
}

TEST(SnapshotReaderTest, KeysInAnyOrderAndEscapedStrings) {
  std::string list = R"({"items":[{"status":{"phase":"Running"},"spec":{"nodeName":"n\u002d1",
      "containers":[{"resources":{"requests":{"nvidia.com\/gpu":"2"}}}]},
      "metadata":{"namespace":"ns","name":"p\"q"},"kind":"Pod"}],"kind":"List","apiVersion":"v1"})";
  absl::StatusOr<ClusterSnapshot> s = ReadSnapshotText(list, "odd.json");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->pods.size(), 1u);
  EXPECT_EQ(s->pods[0].name, "p\"q");
  EXPECT_EQ(s->pods[0].node_name, "n-1");
  EXPECT_EQ(MilliOf(s->pods[0].gpu_requests, kGpuResource), 2000);
}

TEST(SnapshotReaderTest, BadInputIsOneLineNamingFileObjectFieldAndFix) {
  struct Case {
    const char* fixture;
    const char* expected;
  } cases[] = {
      {"bad-not-json.json", "bad-not-json.json: not valid JSON"},
      {"bad-not-list.json", "bad-not-list.json: not a v1 List (kind \"Deployment\", no items)"},
      {"bad-pod-without-name.json",
       "bad-pod-without-name.json: items[1] (Pod): metadata.name: missing"},
      {"bad-quantity.json",
       "bad-quantity.json: pod ml/train-llama-6c8d7f9b5-q4x2z: "
       "spec.containers[0].resources.limits[nvidia.com/gpu]: \"four\" is not a Kubernetes "
       "quantity"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ClusterSnapshot> s = ReadSnapshotFile(Fixture(c.fixture));
    ASSERT_FALSE(s.ok()) << c.fixture;
    std::string msg = Message(s.status());
    EXPECT_NE(msg.find(c.expected), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  absl::StatusOr<ClusterSnapshot> missing = ReadSnapshotFile("/no/such/file.json");
  EXPECT_NE(Message(missing.status()).find("/no/such/file.json: cannot open"), std::string::npos);
  for (const char* text : {"", "[]", "42", "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":{}}",
                           "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":[]} trailing",
                           "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":[{\"kind\":\"Pod\","
                           "\"metadata\":{\"name\":7}}]}",
                           "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":[{\"kind\":\"Node\","
                           "\"metadata\":{\"name\":\"n\"},\"status\":{\"capacity\":"
                           "{\"nvidia.com/gpu\":\"-1\"}}}]}"}) {
    absl::StatusOr<ClusterSnapshot> s = ReadSnapshotText(text, "in.json");
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_NE(Message(s.status()).find("in.json"), std::string::npos) << s.status();
  }
}

}  // namespace
}  // namespace gpunode::kube
