// The labels' parts: the sharing settings from the plugin config, value sanitizing, GPU families,
// the stable scheme's names and sizes, and the merge patch that keeps them on the Node.
#include <cstdio>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/missing_gpus_label.h"
#include "labels/gfd_labels.h"
#include "labels/node_label_patch.h"
#include "labels/sanitize.h"
#include "labels/sharing.h"
#include "labels/stable_labels.h"
#include "plugin_config/config_file.h"

namespace gpunode::labels {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

plugin_config::ConfigFile Parse(const std::string& text) {
  absl::StatusOr<plugin_config::ConfigFile> file =
      plugin_config::ParseConfigFile(text, "config.yaml");
  EXPECT_TRUE(file.ok()) << file.status();
  return file.ok() ? *file : plugin_config::ConfigFile{};
}

TEST(Sharing, TimeSlicingResources) {
  SharingConfig sharing = SharingFrom(Parse(R"(
version: v1
flags:
  migStrategy: mixed
sharing:
  timeSlicing:
    renameByDefault: false
    failRequestsGreaterThanOne: true
    resources:
      - name: gpu
        replicas: 4
      - name: nvidia.com/mig-1g.10gb
        replicas: 2
        devices: all
)"));
  EXPECT_EQ(sharing.strategy, "time-slicing");
  ASSERT_EQ(sharing.resources.size(), 2u);
  EXPECT_EQ(sharing.resources[0].name, "nvidia.com/gpu");
  EXPECT_EQ(sharing.resources[0].replicas, 4);
  EXPECT_FALSE(sharing.resources[0].renamed);
  ASSERT_NE(sharing.Find("nvidia.com/mig-1g.10gb"), nullptr);
  EXPECT_EQ(sharing.Find("nvidia.com/gpu.shared"), nullptr);
}

TEST(Sharing, MpsWinsOverTimeSlicingAndJsonWorks) {
  SharingConfig sharing = SharingFrom(
      Parse(R"({"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "replicas": 2}]},
                           "mps": {"renameByDefault": true,
                                   "resources": [{"name": "gpu", "replicas": 3}]}}})"));
  EXPECT_EQ(sharing.strategy, "mps");
  ASSERT_EQ(sharing.resources.size(), 1u);
  EXPECT_EQ(sharing.resources[0].replicas, 3);
  EXPECT_TRUE(sharing.resources[0].renamed);
}

TEST(Sharing, NoSharingSectionIsNone) {
  SharingConfig sharing = SharingFrom(Parse("version: v1\nflags: {migStrategy: single}\n"));
  EXPECT_EQ(sharing.strategy, "none");
  EXPECT_TRUE(sharing.resources.empty());
}

TEST(Sanitize, GfdRulesThenKubernetesRules) {
  EXPECT_EQ(SanitizeLabelValue("Tesla T4"), "Tesla-T4");
  EXPECT_EQ(SanitizeLabelValue("NVIDIA  GeForce RTX 4090 "), "NVIDIA-GeForce-RTX-4090");
  EXPECT_EQ(SanitizeLabelValue("PowerEdge R750xa (SKU=090E)"), "PowerEdge-R750xa-SKU090E");
  EXPECT_EQ(SanitizeLabelValue("-_.x._-"), "x");
  EXPECT_EQ(SanitizeLabelValue("!!!"), "");
  std::string long_value(80, 'a');
  long_value[62] = '-';
  EXPECT_EQ(SanitizeLabelValue(long_value), std::string(62, 'a'));
  for (const char* v : {"Tesla-T4", "", "a", "1.2_3-4"}) EXPECT_TRUE(IsValidLabelValue(v)) << v;
  for (const char* v : {"-a", "a-", "a b", "é", "a/b"}) EXPECT_FALSE(IsValidLabelValue(v)) << v;
  EXPECT_FALSE(IsValidLabelValue(std::string(64, 'a')));
}

TEST(Sanitize, LabelKeyPrefixIsEmptyOrADnsSubdomainAndSlash) {
  for (const char* good : {"", "example.com/", "a/", "gpu-1.nodes.example.com/", "0a.b9/"}) {
    EXPECT_TRUE(CheckLabelKeyPrefix(good).ok()) << good;
  }
  for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
           {"example.com", "does not end with /"},
           {"/", "has no domain before the /"},
           {"Example.com/", "has 'E'"},
           {"example_com/", "has '_'"},
           {"a..b/", "empty or over-63-character part"},
           {".a/", "empty or over-63-character part"},
           {"-a.b/", "begins or ends with -"},
           {"a.b-/", "begins or ends with -"},
           {std::string(64, 'a') + "/", "over-63-character part"},
           {std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." +
                std::string(63, 'd') + "/",
            "longer than 253"},
           {"example.com/x/", "has '/'"}}) {
    absl::Status st = CheckLabelKeyPrefix(bad);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_THAT(std::string(st.message()), HasSubstr(why)) << bad;
  }
}

TEST(GpuFamily, ByComputeCapability) {
  EXPECT_EQ(GpuFamily(6, 0), "pascal");
  EXPECT_EQ(GpuFamily(7, 0), "volta");
  EXPECT_EQ(GpuFamily(7, 5), "turing");
  EXPECT_EQ(GpuFamily(8, 0), "ampere");
  EXPECT_EQ(GpuFamily(8, 6), "ampere");
  EXPECT_EQ(GpuFamily(8, 9), "ada-lovelace");
  EXPECT_EQ(GpuFamily(9, 0), "hopper");
  EXPECT_EQ(GpuFamily(10, 0), "blackwell");
  EXPECT_EQ(GpuFamily(12, 0), "blackwell");
  EXPECT_EQ(GpuFamily(4, 0), "undefined");
}

TEST(StableLabels, AcceleratorAndMarketedMemory) {
  EXPECT_EQ(AcceleratorName("NVIDIA A10"), "nvidia-a10");
  EXPECT_EQ(AcceleratorName("Tesla T4"), "nvidia-tesla-t4");
  EXPECT_EQ(AcceleratorName("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
  // What NVML reports -> the size the GPU is sold with.
  struct Case {
    uint64_t mib;
    uint64_t gib;
  };
  for (const Case& c :
       {Case{23028, 24} /* A10, ECC on */, Case{15360, 16} /* T4 */, Case{46068, 48} /* A40 */,
        Case{81559, 80} /* H100 */, Case{143771, 141} /* H200 */, Case{16160, 16} /* V100 */,
        Case{81920, 80} /* A100 */, Case{24564, 24} /* RTX 4090 */, Case{12288, 12} /* RTX 3060 */,
        Case{8192, 8}, Case{95830, 94}}) {
    EXPECT_EQ(MarketedMemoryGiB(c.mib), c.gib) << c.mib;
  }
}

TEST(StableLabels, KeysWithPrefixTheFirstModelAndThePhysicalCount) {
  NodeFacts facts;
  for (auto [name, mib] :
       {std::pair{"NVIDIA A10", 23028}, {"NVIDIA A10", 23028}, {"Tesla T4", 15360}}) {
    GpuFacts gpu;
    gpu.name = name;
    gpu.memory_mib = mib;
    facts.gpus.push_back(gpu);
  }
  // Every GPU the machine has counts, whatever its model.
  Labels labels = StableLabels(facts, "example.com/");
  EXPECT_EQ(labels, (Labels{{"example.com/accelerator", "nvidia-a10"},
                            {"example.com/gpu.count", "3"},
                            {"example.com/gpu.memory", "24g"}}));
  // One more on the bus than answer: the bus's count.
  facts.physical_count = 4;
  EXPECT_EQ(StableLabels(facts, "").at("gpu.count"), "4");
  // None answers: the count, and both missing, so the node still reads as short of what it had.
  EXPECT_EQ(StableLabels(NodeFacts{.driver_version = {},
                                   .cuda_driver_version = {},
                                   .gpus = {},
                                   .physical_count = 2,
                                   .pci_bus = {}},
                         ""),
            (Labels{{"gpu.count", "2"}, {"gpu.missing", "2-unknown"}}));
  EXPECT_TRUE(StableLabels(NodeFacts{}, "").empty());
}

NodeFacts AnsweringAt(const std::vector<std::string>& addresses) {
  NodeFacts facts;
  for (const std::string& address : addresses) {
    GpuFacts gpu;
    gpu.index = static_cast<unsigned>(facts.gpus.size());
    gpu.name = "NVIDIA A10";
    gpu.pci_address = address;
    facts.gpus.push_back(gpu);
  }
  facts.physical_count = static_cast<unsigned>(addresses.size());
  return facts;
}

TEST(StableLabels, TheMissingGpusByPciAddress) {
  // Every GPU answers: no gpu.missing, whatever the bus says.
  NodeFacts healthy = AnsweringAt({"0000:17:00.0", "0000:65:00.0"});
  healthy.pci_bus = {"0000:17:00.0", "0000:65:00.0"};
  EXPECT_FALSE(StableLabels(healthy, "").contains("gpu.missing"));
  EXPECT_TRUE(MissingGpusOf(healthy).empty());

  // The driver enumerated 2 (one lost); the bus has both, and one more it did not take.
  NodeFacts lost = AnsweringAt({"0000:65:00.0"});
  lost.physical_count = 3;
  lost.pci_bus = {"0000:17:00.0", "0000:65:00.0", "0001:b3:00.0"};
  EXPECT_EQ(StableLabels(lost, "example.com/").at("example.com/gpu.missing"),
            "17-00.0_0001-b3-00.0");
  EXPECT_EQ(StableLabels(lost, "example.com/").at("example.com/gpu.count"), "3");

  // No bus to read: how many, not where.
  lost.pci_bus.reset();
  EXPECT_EQ(StableLabels(lost, "").at("gpu.missing"), "2-unknown");

  // A bus whose controllers are not where the answering GPUs are cannot name the missing one.
  NodeFacts elsewhere = AnsweringAt({"0000:65:00.0"});
  elsewhere.physical_count = 2;
  elsewhere.pci_bus = {"0000:01:00.0", "0000:02:00.0"};
  EXPECT_EQ(StableLabels(elsewhere, "").at("gpu.missing"), "1-unknown");
}

TEST(MissingGpusLabel, FitsALabelValueAndReadsBack) {
  kube::MissingGpus one{{"0000:3b:00.0"}, 0, 0};
  EXPECT_EQ(kube::FormatMissingGpus(one), "3b-00.0");
  EXPECT_EQ(kube::FormatMissingGpus({}), "");
  // Ten missing: seven named, the rest counted; the value stays a valid label value.
  kube::MissingGpus ten;
  for (int bus = 0x10; bus < 0x1a; ++bus) {
    char address[16];
    std::snprintf(address, sizeof address, "0000:%02x:00.0", bus);
    ten.addresses.push_back(address);
  }
  std::string value = kube::FormatMissingGpus(ten);
  EXPECT_EQ(value, "10-00.0_11-00.0_12-00.0_13-00.0_14-00.0_15-00.0_16-00.0_3-more");
  EXPECT_LE(value.size(), 63u);
  EXPECT_TRUE(IsValidLabelValue(value)) << value;
  absl::StatusOr<kube::MissingGpus> back = kube::ParseMissingGpus(value);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->addresses.size(), 7u);
  EXPECT_EQ(back->addresses.front(), "0000:10:00.0");
  EXPECT_EQ(back->unlisted, 3);
  EXPECT_EQ(back->Count(), 10);
  EXPECT_EQ(back->Describe(),
            "0000:10:00.0, 0000:11:00.0, 0000:12:00.0, 0000:13:00.0, 0000:14:00.0, "
            "0000:15:00.0, 0000:16:00.0 and 3 more");

  kube::MissingGpus mixed{{"0001:B3:00.1"}, 0, 1};
  EXPECT_EQ(kube::FormatMissingGpus(mixed), "0001-b3-00.1_1-unknown");
  back = kube::ParseMissingGpus("0001-b3-00.1_1-unknown");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->addresses, std::vector<std::string>{"0001:b3:00.1"});
  EXPECT_EQ(back->Describe(), "0001:b3:00.1 and 1 at an unknown PCI address");
  EXPECT_EQ(kube::ParseMissingGpus("2-unknown")->Describe(), "2 at unknown PCI addresses");

  for (const char* bad : {"", "yes", "3b:00.0", "3b-00", "3b-00.9", "0-more", "x-unknown",
                          "3b-00.0__1-more", "1-2-3-4.0"}) {
    absl::StatusOr<kube::MissingGpus> parsed = kube::ParseMissingGpus(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("N-more or N-unknown")) << bad;
  }
}

// The Node's labels as the labeller reads them: labels, and the annotation listing its own.
NodeLabelState Node(Labels labels, std::optional<std::string> owned = std::nullopt) {
  return NodeLabelState{.labels = std::move(labels), .owned = std::move(owned)};
}

TEST(NodeLabelPatch, TheFirstWriteSetsItsLabelsListsThemAndLeavesTheOthers) {
  Labels want = {{"nvidia.com/gpu.present", "true"}, {"nvidia.com/gpu.count", "4"}};
  std::optional<NodeLabelPatch> patch =
      MakeNodeLabelPatch(Node({{"kubernetes.io/hostname", "gpu-a"}, {"team", "ml"}}), want);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->patch, nlohmann::json::parse(R"({"metadata": {
      "labels": {"nvidia.com/gpu.count": "4", "nvidia.com/gpu.present": "true"},
      "annotations": {"gpunode.io/labels": "nvidia.com/gpu.count,nvidia.com/gpu.present"}}})"));
  EXPECT_EQ(patch->set, 2);
  EXPECT_EQ(patch->removed, 0);
}

TEST(NodeLabelPatch, NothingToWriteWhenTheNodeHasItAll) {
  Labels want = {{"nvidia.com/gpu.present", "true"}, {"accelerator", "nvidia-a10"}};
  Labels on_node = want;
  on_node["team"] = "ml";
  EXPECT_FALSE(
      MakeNodeLabelPatch(Node(on_node, "accelerator,nvidia.com/gpu.present"), want).has_value());
}

TEST(NodeLabelPatch, RemovesOnlyTheLabelsItWroteAndNoLongerWrites) {
  // It wrote the stable scheme before; now it does not. `team` and `pool` were never its own, and
  // `gpu.memory`, listed but already gone from the Node, needs no removal.
  NodeLabelState node = Node({{"nvidia.com/gpu.present", "true"},
                              {"accelerator", "nvidia-a10"},
                              {"gpu.count", "4"},
                              {"team", "ml"},
                              {"pool", "training"}},
                             "accelerator,gpu.count,gpu.memory,nvidia.com/gpu.present");
  std::optional<NodeLabelPatch> patch =
      MakeNodeLabelPatch(node, {{"nvidia.com/gpu.present", "true"}});
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->patch, nlohmann::json::parse(R"({"metadata": {
      "labels": {"accelerator": null, "gpu.count": null},
      "annotations": {"gpunode.io/labels": "nvidia.com/gpu.present"}}})"));
  EXPECT_EQ(patch->set, 0);
  EXPECT_EQ(patch->removed, 2);
}

TEST(NodeLabelPatch, NoLabelsLeftRemovesTheAnnotationToo) {
  std::optional<NodeLabelPatch> patch = MakeNodeLabelPatch(
      Node({{"nvidia.com/gpu.present", "true"}, {"team", "ml"}}, "nvidia.com/gpu.present"), {});
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->patch, nlohmann::json::parse(R"({"metadata": {
      "labels": {"nvidia.com/gpu.present": null},
      "annotations": {"gpunode.io/labels": null}}})"));
  EXPECT_FALSE(MakeNodeLabelPatch(Node({{"team", "ml"}}), {}).has_value());
}

TEST(NodeLabelPatch, ALabelItWritesIsTakenOverAndAChangedValueSet) {
  // Set by hand before the labeller came: the value stays, the key becomes the labeller's.
  std::optional<NodeLabelPatch> patch = MakeNodeLabelPatch(
      Node({{"nvidia.com/gpu.present", "true"}}), {{"nvidia.com/gpu.present", "true"}});
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->patch, nlohmann::json::parse(R"({"metadata": {
      "annotations": {"gpunode.io/labels": "nvidia.com/gpu.present"}}})"));
  EXPECT_EQ(patch->set, 0);
  // A value someone changed is put back.
  patch = MakeNodeLabelPatch(Node({{"nvidia.com/gpu.present", "false"}}, "nvidia.com/gpu.present"),
                             {{"nvidia.com/gpu.present", "true"}});
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->patch, nlohmann::json::parse(
                              R"({"metadata": {"labels": {"nvidia.com/gpu.present": "true"}}})"));
  EXPECT_EQ(patch->set, 1);
}

TEST(NodeLabelPatch, TheTimestampAloneDoesNotRewriteTheNode) {
  const std::set<std::string> refresh = {kTimestampLabel};
  NodeLabelState node = Node({{kTimestampLabel, "100"}, {"nvidia.com/gpu.count", "4"}},
                             "nvidia.com/gfd.timestamp,nvidia.com/gpu.count");
  EXPECT_FALSE(
      MakeNodeLabelPatch(node, {{kTimestampLabel, "160"}, {"nvidia.com/gpu.count", "4"}}, refresh)
          .has_value());
  // With another change it is written at its new value.
  std::optional<NodeLabelPatch> patch =
      MakeNodeLabelPatch(node, {{kTimestampLabel, "160"}, {"nvidia.com/gpu.count", "3"}}, refresh);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->patch, nlohmann::json::parse(R"({"metadata": {"labels": {
      "nvidia.com/gfd.timestamp": "160", "nvidia.com/gpu.count": "3"}}})"));
  EXPECT_EQ(patch->set, 1);
  // A Node without it gets it.
  patch = MakeNodeLabelPatch(Node({{"nvidia.com/gpu.count", "4"}}, "nvidia.com/gpu.count"),
                             {{kTimestampLabel, "160"}, {"nvidia.com/gpu.count", "4"}}, refresh);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->patch["metadata"]["labels"], nlohmann::json({{kTimestampLabel, "160"}}));
}

// Without a prefix the stable keys are bare on the Node: the selector accelerator=nvidia-a10
// matches.
TEST(NodeLabelPatch, TheStableSchemeWithoutAPrefixIsBare) {
  NodeFacts facts;
  GpuFacts a10;
  a10.name = "NVIDIA A10";
  a10.memory_mib = 23028;
  facts.gpus.push_back(a10);
  facts.physical_count = 1;
  std::optional<NodeLabelPatch> patch = MakeNodeLabelPatch(Node({}), StableLabels(facts, ""));
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(
      patch->patch["metadata"]["labels"],
      nlohmann::json({{"accelerator", "nvidia-a10"}, {"gpu.count", "1"}, {"gpu.memory", "24g"}}));
}

TEST(NodeLabelPatch, ReadsTheNodesLabelsAndItsAnnotation) {
  absl::StatusOr<NodeLabelState> node = ReadNodeLabelState(R"({"kind": "Node", "metadata": {
      "name": "gpu-a", "labels": {"team": "ml", "odd": 3},
      "annotations": {"gpunode.io/labels": "a,b", "other": "x"}}})",
                                                           "gpu-a");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->labels, (Labels{{"team", "ml"}}));
  EXPECT_EQ(node->owned, "a,b");
  EXPECT_EQ(OwnedKeys(*node), (std::set<std::string>{"a", "b"}));
  node = ReadNodeLabelState(R"({"kind": "Node", "metadata": {"name": "gpu-a"}})", "gpu-a");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_TRUE(node->labels.empty());
  EXPECT_FALSE(node->owned.has_value());
  EXPECT_THAT(ReadNodeLabelState("<html>", "gpu-a").status().message(),
              HasSubstr("node gpu-a: the API server's answer is not a Node"));
}

}  // namespace
}  // namespace gpunode::labels
