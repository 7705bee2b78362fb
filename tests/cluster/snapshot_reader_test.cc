#include "kube/snapshot_reader.h"

#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "build_paths.h"
#include "cluster_fixture.h"
#include "gtest/gtest.h"
#include "kube/gpu_resources.h"
#include "test_support.h"

namespace gpunode::kube {
namespace {

TEST(SnapshotReaderTest, ReadsAKubectlList) {
  absl::StatusOr<ClusterSnapshot> s = ReadSnapshotFile(testing::ClusterFixture("healthy.json"));
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
  absl::StatusOr<ClusterSnapshot> s =
      ReadSnapshotFile(testing::ClusterFixture("pending-affinity.json"), options);
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
  EXPECT_NE(testing::StatusMessage(no_kind.status()).find("k.json: items[0] (item): kind: missing"),
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
    absl::StatusOr<ClusterSnapshot> s = ReadSnapshotFile(testing::ClusterFixture(c.fixture));
    ASSERT_FALSE(s.ok()) << c.fixture;
    std::string msg = testing::StatusMessage(s.status());
    EXPECT_NE(msg.find(c.expected), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  absl::StatusOr<ClusterSnapshot> missing = ReadSnapshotFile("/no/such/file.json");
  EXPECT_NE(testing::StatusMessage(missing.status()).find("/no/such/file.json: cannot open"),
            std::string::npos);
  for (const char* text : {"", "[]", "42", "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":{}}",
                           "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":[]} trailing",
                           "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":[{\"kind\":\"Pod\","
                           "\"metadata\":{\"name\":7}}]}",
                           "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":[{\"kind\":\"Node\","
                           "\"metadata\":{\"name\":\"n\"},\"status\":{\"capacity\":"
                           "{\"nvidia.com/gpu\":\"-1\"}}}]}"}) {
    absl::StatusOr<ClusterSnapshot> s = ReadSnapshotText(text, "in.json");
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_NE(testing::StatusMessage(s.status()).find("in.json"), std::string::npos) << s.status();
  }
}

// A descriptor reading `text`: a memfd (seekable, as a file is) or the read end of a pipe.
class TextFd {
 public:
  enum Kind { kFile, kPipe };
  TextFd(std::string_view text, Kind kind) {
    if (kind == kFile) {
      fd_ = ::memfd_create("snapshot", MFD_CLOEXEC);
      EXPECT_EQ(::write(fd_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
      EXPECT_EQ(::lseek(fd_, 0, SEEK_SET), 0);
      return;
    }
    int ends[2];
    EXPECT_EQ(::pipe(ends), 0);
    EXPECT_LT(text.size(), 65536u);  // what a pipe holds without a reader
    EXPECT_EQ(::write(ends[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(ends[1]);
    fd_ = ends[0];
  }
  ~TextFd() { ::close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// What a snapshot holds, as text to compare two reads by.
std::string Digest(const ClusterSnapshot& s) {
  std::ostringstream out;
  out << "pdbs=" << s.has_pdbs << "\n";
  for (const NodeView& n : s.nodes) {
    out << "node " << n.name << " " << MilliOf(n.capacity, kGpuResource) << " "
        << MilliOf(n.allocatable, kGpuResource) << " " << n.labels.size() << " " << n.taints.size()
        << "\n";
  }
  for (const PodView& p : s.pods) {
    out << "pod " << p.ns << "/" << p.name << " on " << p.node_name << " "
        << static_cast<int>(p.phase) << " " << MilliOf(p.gpu_requests, kGpuResource) << " "
        << (p.details != nullptr) << "\n";
  }
  for (const PdbView& p : s.pdbs) out << "pdb " << p.ns << "/" << p.name << "\n";
  for (const JobView& j : s.jobs) out << j.kind << " " << j.ns << "/" << j.name << "\n";
  for (const ImagePullEvent& e : s.image_pulls) out << "pull " << e.ns << "/" << e.pod << "\n";
  return out.str();
}

TEST(SnapshotReaderTest, AStreamedFileReadsAsTheWholeDocumentDoes) {
  ReadOptions options;
  options.keep_pod_details = [](const PodView&) { return true; };
  size_t compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(build_paths::kClusterFixtures)) {
    if (entry.path().extension() != ".json") continue;
    const std::string name = entry.path().filename();
    const std::string text = testing::ReadText(entry.path());
    absl::StatusOr<ClusterSnapshot> whole = ReadSnapshotText(text, name, options);
    // From a buffer of one byte (a refill at every byte) to more than the file.
    for (size_t buffer : {size_t{1}, size_t{7}, size_t{100}, size_t{4096}, size_t{1} << 20}) {
      TextFd in(text, TextFd::kFile);
      absl::StatusOr<ClusterSnapshot> streamed = ReadSnapshotStream(in.fd(), name, options, buffer);
      ASSERT_EQ(streamed.ok(), whole.ok()) << name << " with buffer " << buffer << ": "
                                           << streamed.status() << " / " << whole.status();
      if (whole.ok()) {
        EXPECT_EQ(Digest(*streamed), Digest(*whole)) << name << " with buffer " << buffer;
      } else if (name == "bad-not-json.json") {
        // The file ends inside its items: the splitter says so before simdjson could.
        EXPECT_TRUE(
            testing::StatusMessage(streamed.status()).starts_with(name + ": not valid JSON ("))
            << streamed.status();
      } else {
        EXPECT_EQ(streamed.status(), whole.status()) << name << " with buffer " << buffer;
      }
    }
    ++compared;
  }
  EXPECT_GE(compared, 30u);
}

TEST(SnapshotReaderTest, ErrorsInAStreamedFileNameTheFilesLineAndByte) {
  // A JSON error inside an item, and one in the envelope after the items were cut out of it.
  for (const std::string text :
       {"{\"apiVersion\": \"v1\",\n \"items\": [\n  {\"kind\": \"Node\", \"metadata\": "
        "{\"name\": \"n1\"}},\n  {\"kind\": \"Pod\",\n   \"metadata\": {\"name\": \"x\",, "
        "\"namespace\": \"d\"}}\n ],\n \"kind\": \"List\"\n}\n",
        "{\"apiVersion\": \"v1\",\n \"items\": [\n  {\"kind\": \"Node\", \"metadata\": "
        "{\"name\": \"n1\"}},\n  {\"kind\": \"Node\",\n   \"metadata\": {\"name\": "
        "\"x\"}}\n ],\n \"kind\": \"List\",,\n \"metadata\": {}\n}\n"}) {
    absl::StatusOr<ClusterSnapshot> whole = ReadSnapshotText(text, "in.json");
    ASSERT_FALSE(whole.ok());
    ASSERT_NE(testing::StatusMessage(whole.status()).find(" near line "), std::string::npos)
        << whole.status();
    for (size_t buffer : {size_t{1}, size_t{16}, size_t{1} << 20}) {
      TextFd in(text, TextFd::kFile);
      absl::StatusOr<ClusterSnapshot> streamed = ReadSnapshotStream(in.fd(), "in.json", {}, buffer);
      EXPECT_EQ(streamed.status(), whole.status()) << buffer;
    }
  }
}

TEST(SnapshotReaderTest, ItemsWithoutKindsBeforeTheListsKindAreReadAgainFromAFile) {
  // As `kubectl get --raw /api/v1/nodes | jq -S .` writes a list page.
  const std::string sorted = R"({"apiVersion":"v1","items":[
      {"metadata":{"name":"n1"},"status":{"capacity":{"nvidia.com/gpu":"2"}}},
      {"metadata":{"name":"n2"},"status":{"capacity":{"nvidia.com/gpu":"4"}}}],
    "kind":"NodeList","metadata":{"resourceVersion":"7"}})";
  TextFd file(sorted, TextFd::kFile);
  absl::StatusOr<ClusterSnapshot> s = ReadSnapshotStream(file.fd(), "sorted.json", {}, 16);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->nodes.size(), 2u);
  EXPECT_EQ(MilliOf(s->nodes[1].capacity, kGpuResource), 4000);
  // A pipe cannot be read twice: the error names the fix.
  TextFd pipe(sorted, TextFd::kPipe);
  s = ReadSnapshotStream(pipe.fd(), "stdin", {}, 16);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(testing::StatusMessage(s.status()),
            "stdin: items[0] (item): kind: missing, and the list's kind comes after its items, "
            "which cannot be read twice from a pipe; give the file itself, or put \"kind\" "
            "before \"items\"");
  // With the list's kind first, a pipe streams like a file.
  TextFd ordered(R"({"kind":"NodeList","apiVersion":"v1","items":[{"metadata":{"name":"n1"}}]})",
                 TextFd::kPipe);
  s = ReadSnapshotStream(ordered.fd(), "stdin", {}, 16);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->nodes.size(), 1u);
}

TEST(SnapshotReaderTest, ADirectoryOrYamlIsNamedForWhatItIs) {
  absl::StatusOr<ClusterSnapshot> dir = ReadSnapshotFile(build_paths::kClusterFixtures);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(testing::StatusMessage(dir.status()),
            std::string(build_paths::kClusterFixtures) +
                ": is a directory; give a file written by `kubectl get "
                "nodes,pods -A -o json` (or - for stdin)");
  TextFd yaml("apiVersion: v1\nkind: List\nitems:\n- kind: Node\n", TextFd::kFile);
  absl::StatusOr<ClusterSnapshot> s = ReadSnapshotStream(yaml.fd(), "snap.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(
      testing::StatusMessage(s.status()),
      "snap.yaml: YAML, not JSON; write the snapshot with `kubectl get nodes,pods -A -o json`");
}

}  // namespace
}  // namespace gpunode::kube
