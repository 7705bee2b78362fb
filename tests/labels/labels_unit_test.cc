// The labels' parts: the plugin config reader, value sanitizing, GPU families and the stable
// scheme's names and sizes.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "labels/gfd_labels.h"
#include "labels/plugin_config.h"
#include "labels/sanitize.h"
#include "labels/stable_labels.h"

namespace gpunode::labels {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(PluginConfig, TimeSlicingAndMigStrategy) {
  absl::StatusOr<PluginConfig> config = ParsePluginConfig(R"(
version: v1
flags:
  migStrategy: mixed
  failOnInitError: true
  plugin: {passDeviceSpecs: true}
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
)",
                                                          "config.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mig_strategy, MigStrategy::kMixed);
  EXPECT_EQ(config->sharing.strategy, "time-slicing");
  ASSERT_EQ(config->sharing.resources.size(), 2u);
  EXPECT_EQ(config->sharing.resources[0].name, "nvidia.com/gpu");
  EXPECT_EQ(config->sharing.resources[0].replicas, 4);
  EXPECT_FALSE(config->sharing.resources[0].renamed);
  ASSERT_NE(config->sharing.Find("nvidia.com/mig-1g.10gb"), nullptr);
  EXPECT_EQ(config->sharing.Find("nvidia.com/gpu.shared"), nullptr);
}

TEST(PluginConfig, MpsWinsOverTimeSlicingAndJsonWorks) {
  absl::StatusOr<PluginConfig> config = ParsePluginConfig(
      R"({"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "replicas": 2}]},
                      "mps": {"renameByDefault": true,
                              "resources": [{"name": "gpu", "replicas": 3}]}}})",
      "config.json");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->sharing.strategy, "mps");
  EXPECT_EQ(config->sharing.resources[0].replicas, 3);
  EXPECT_TRUE(config->sharing.resources[0].renamed);
  EXPECT_FALSE(config->mig_strategy.has_value());
}

TEST(PluginConfig, EmptyFileIsTheDefault) {
  absl::StatusOr<PluginConfig> config = ParsePluginConfig("", "empty.yaml");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->sharing.strategy, "none");
  EXPECT_TRUE(ParsePluginConfig("version: \"\"\n", "v.yaml").ok());
}

TEST(PluginConfig, ErrorsNameFileLineFieldAndFix) {
  struct Case {
    const char* text;
    const char* expected;
  };
  for (const Case& c : std::vector<Case>{
           {"version: v2\n", "c.yaml:1: version: unknown version \"v2\"; give v1"},
           {"flags:\n  migStrategy: many\n",
            "c.yaml:2: flags.migStrategy: \"many\" is not a MIG strategy; give none, single or "
            "mixed"},
           {"sharing:\n  timeSlicing:\n    resources:\n      - name: gpu\n        replicas: 1\n",
            "c.yaml:5: sharing.timeSlicing.resources[0].replicas: number of replicas must be >= 2"},
           {"sharing:\n  timeSlicing:\n    resources:\n      - name: gpu\n        replica: 4\n",
            "c.yaml:5: sharing.timeSlicing.resources[0].replica: unknown field; known: name, "
            "rename, devices, replicas"},
           {"sharing:\n  timeSlicing:\n    resources: []\n",
            "c.yaml:3: sharing.timeSlicing.resources: no resources specified"},
           {"sharing:\n  timeSlicing:\n    renameByDefault: yes please\n",
            "c.yaml:3: sharing.timeSlicing.renameByDefault: \"yes please\" is not a boolean"},
           {"sharing:\n  timeSlicing:\n    resources:\n      - name: GPU!\n        replicas: 2\n",
            "c.yaml:4: sharing.timeSlicing.resources[0].name: \"GPU!\" is not a valid resource"},
           {"sharing:\n  timeSlicing:\n    resources:\n      - name: gpu\n        replicas: two\n",
            "c.yaml:5: sharing.timeSlicing.resources[0].replicas: is not an integer"},
           {"sharing:\n  timeslicing: {}\n", "c.yaml:2: sharing.timeslicing: unknown field"},
           {"versoin: v1\n", "c.yaml:1: versoin: unknown field; known: version, flags"},
           {"version: v1\nversion: v1\n", "c.yaml:2: version: given twice"},
           {"sharing: [1, 2]\n", "c.yaml:1: sharing: is not a map"},
           {"flags: {migStrategy: [a]}\n", "c.yaml:1: flags.migStrategy: is not a string"},
           {"a: [1,\n", "c.yaml:2: not valid YAML or JSON"},
       }) {
    absl::StatusOr<PluginConfig> config = ParsePluginConfig(c.text, "c.yaml");
    ASSERT_FALSE(config.ok()) << c.text;
    EXPECT_THAT(std::string(config.status().message()), StartsWith(c.expected)) << c.text;
    EXPECT_THAT(std::string(config.status().message()), HasSubstr("; "));
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(PluginConfig, MissingFileNamesTheFlag) {
  absl::StatusOr<PluginConfig> config = ReadPluginConfig("/nonexistent/config.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              StartsWith("--config-file: /nonexistent/config.yaml: cannot open"));
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

TEST(StableLabels, KeysWithPrefixAndCountOfTheFirstModel) {
  NodeFacts facts;
  for (auto [name, mib] :
       {std::pair{"NVIDIA A10", 23028}, {"NVIDIA A10", 23028}, {"Tesla T4", 15360}}) {
    GpuFacts gpu;
    gpu.name = name;
    gpu.memory_mib = mib;
    facts.gpus.push_back(gpu);
  }
  Labels labels = StableLabels(facts, "example.com/");
  EXPECT_EQ(labels, (Labels{{"example.com/accelerator", "nvidia-a10"},
                            {"example.com/gpu.count", "2"},
                            {"example.com/gpu.memory", "24g"}}));
  EXPECT_TRUE(StableLabels(NodeFacts{}, "").empty());
}

}  // namespace
}  // namespace gpunode::labels
