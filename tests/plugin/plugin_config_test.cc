// The NVIDIA-compatible config: every key of NVIDIA's v1 file is accepted, anything else is an
// error naming the key, its line and where it belongs; precedence is flag > env > file > default.
#include <filesystem>
#include <fstream>
#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "health/xid.h"
#include "plugin_config/config_file.h"
#include "plugin_config/sources.h"

namespace gpunode::plugin_config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
// The health checks read DP_DISABLE_HEALTHCHECKS and DP_ENABLE_HEALTHCHECKS as the sources give
// them.

absl::StatusOr<ConfigFile> Parse(const std::string& text) {
  return ParseConfigFile(text, "config.yaml");
}

TEST(ConfigFile, EmptyFileIsAllDefaults) {
  absl::StatusOr<ConfigFile> file = Parse("");
  ASSERT_TRUE(file.ok()) << file.status();
  Config config = Merge({&file->flags}, file->time_slicing);
  EXPECT_EQ(config.mig_strategy, MigStrategy::kNone);
  EXPECT_TRUE(config.fail_on_init_error);
  EXPECT_FALSE(config.pass_device_specs);
  EXPECT_THAT(config.device_list_strategies, ElementsAre(DeviceListStrategy::kEnvvar));
  EXPECT_EQ(config.device_id_strategy, DeviceIdStrategy::kUuid);
  EXPECT_EQ(config.dev_root(), "/");
}

// The example of NVIDIA's README, with GFD's flags and every plugin flag.
TEST(ConfigFile, NvidiaFileLoadsUnchanged) {
  absl::StatusOr<ConfigFile> file = Parse(R"(version: v1
flags:
  migStrategy: "mixed"
  failOnInitError: true
  nvidiaDriverRoot: "/run/nvidia/driver"
  plugin:
    passDeviceSpecs: false
    deviceListStrategy: ["envvar", "cdi-annotations"]
    deviceIDStrategy: "index"
    cdiAnnotationPrefix: "cdi.k8s.io/"
    nvidiaCTKPath: "/usr/bin/nvidia-ctk"
    containerDriverRoot: "/driver-root"
  gfd:
    oneshot: false
    noTimestamp: false
    outputFile: /etc/kubernetes/node-feature-discovery/features.d/gfd
    sleepInterval: 60s
sharing:
  timeSlicing:
    renameByDefault: false
    failRequestsGreaterThanOne: false
    resources:
    - name: nvidia.com/gpu
      replicas: 10
)");
  ASSERT_TRUE(file.ok()) << file.status();
  Config config = Merge({&file->flags}, file->time_slicing);
  EXPECT_EQ(config.mig_strategy, MigStrategy::kMixed);
  EXPECT_EQ(config.nvidia_driver_root, "/run/nvidia/driver");
  EXPECT_EQ(config.dev_root(), "/run/nvidia/driver");
  EXPECT_THAT(config.device_list_strategies,
              ElementsAre(DeviceListStrategy::kEnvvar, DeviceListStrategy::kCdiAnnotations));
  EXPECT_EQ(config.device_id_strategy, DeviceIdStrategy::kIndex);
  ASSERT_EQ(config.time_slicing.resources.size(), 1u);
  EXPECT_EQ(config.time_slicing.resources[0].name, "nvidia.com/gpu");
  EXPECT_EQ(config.time_slicing.resources[0].replicas, 10);
}

TEST(ConfigFile, JsonWorksToo) {
  absl::StatusOr<ConfigFile> file =
      Parse(R"({"version": "v1", "flags": {"migStrategy": "single", "plugin": )"
            R"({"deviceListStrategy": "volume-mounts"}}})");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->flags.mig_strategy, MigStrategy::kSingle);
  EXPECT_THAT(*file->flags.device_list_strategies, ElementsAre(DeviceListStrategy::kVolumeMounts));
}

TEST(ConfigFile, ShortResourceNameGetsTheDomain) {
  absl::StatusOr<ConfigFile> file =
      Parse("sharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 2}\n");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->time_slicing.resources[0].name, "nvidia.com/gpu");
}

TEST(ConfigFile, KeyInTheWrongSectionNamesWhereItBelongs) {
  absl::StatusOr<ConfigFile> file = Parse("version: v1\nflags:\n  renameByDefault: true\n");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message(),
            "config.yaml:3: flags.renameByDefault: unknown key; renameByDefault belongs under "
            "sharing.timeSlicing or sharing.mps");
  EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConfigFile, PluginFlagOneLevelTooHigh) {
  absl::StatusOr<ConfigFile> file = Parse("flags:\n  passDeviceSpecs: true\n");
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.status().message(),
              HasSubstr("config.yaml:2: flags.passDeviceSpecs: unknown key; passDeviceSpecs "
                        "belongs under flags.plugin"));
}

TEST(ConfigFile, MisspelledKeySuggestsTheRightOne) {
  absl::StatusOr<ConfigFile> file = Parse("flags:\n  migstrategy: mixed\n");
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.status().message(), HasSubstr("did you mean migStrategy?"));
  file = Parse("sharing:\n  timeSlicing:\n    bogus: 1\n");
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.status().message(),
              HasSubstr("config.yaml:3: sharing.timeSlicing.bogus: unknown key; known keys under "
                        "sharing.timeSlicing: renameByDefault, failRequestsGreaterThanOne, "
                        "resources"));
}

TEST(ConfigFile, ClearErrorsForBadValues) {
  struct Case {
    std::string yaml;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"version: v2\n", "config.yaml:1: version: unknown version \"v2\"; use v1"},
      {"flags:\n  migStrategy: both\n",
       "config.yaml:2: flags.migStrategy: \"both\" is not a MIG strategy; use none, single, mixed"},
      {"flags:\n  plugin:\n    deviceListStrategy: [envvar, magic]\n",
       "\"magic\" is not a device list strategy; use envvar, volume-mounts, cdi-annotations, "
       "cdi-cri"},
      {"flags:\n  plugin:\n    deviceIDStrategy: serial\n", "is not a device ID strategy"},
      {"flags:\n  failOnInitError: \"true\"\n",
       "config.yaml:2: flags.failOnInitError: \"true\" is not a boolean; write true or false "
       "without quotes"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 1}\n",
       "sharing.timeSlicing.resources[0].replicas: number of replicas must be >= 2, got 1"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu}\n",
       "sharing.timeSlicing.resources[0].replicas: required"},
      {"sharing:\n  timeSlicing:\n    renameByDefault: true\n",
       "sharing.timeSlicing.resources: no resources specified"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - {name: example.com/gpu, replicas: 2}\n",
       "is not an nvidia.com resource"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 2}\n"
       "    - {name: nvidia.com/gpu, replicas: 3}\n",
       "nvidia.com/gpu is listed twice"},
      {"sharing:\n  mps:\n    resources:\n    - {name: gpu, replicas: 1}\n",
       "sharing.mps.resources[0].replicas: number of replicas must be >= 2, got 1"},
      {"flags:\n  migStrategy: mixed\n  migStrategy: none\n",
       "config.yaml:3: flags.migStrategy: duplicate key"},
      {"flags: [1, 2]\n", "flags: must be a mapping"},
      {"flags:\n  plugin: {deviceListStrategy: []}\n", "empty list"},
      {"flags: {migStrategy: mixed\n", "config.yaml:"},
      {"flags:\n  nvidiaDriverRoot: \"/run/\xff\"\n",
       "flags.nvidiaDriverRoot: must be UTF-8 text without control characters"},
      // A control character in a key is written escaped; the message stays one line.
      {"fl\x01"
       "ags: {}\n",
       "config.yaml:1: fl\\x01ags: unknown key"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ConfigFile> file = Parse(c.yaml);
    ASSERT_FALSE(file.ok()) << c.yaml;
    EXPECT_THAT(std::string(file.status().message()), HasSubstr(c.message)) << c.yaml;
    EXPECT_EQ(std::string(file.status().message()).find('\n'), std::string::npos);
  }
}

TEST(ConfigFile, UnsupportedButValidSettingsWarn) {
  absl::StatusOr<ConfigFile> file = Parse(
      "flags:\n  gdsEnabled: false\nresources:\n  gpus:\n  - {pattern: '*', name: gpu}\n"
      "sharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 2, rename: x}\n");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->warnings.size(), 2u);
}

using Vars = std::map<std::string, std::string>;

class FakeEnvironment {
 public:
  explicit FakeEnvironment(std::map<std::string, std::string> values)
      : values_(std::move(values)) {}
  Environment get() const {
    return [this](const char* name) -> const char* {
      auto it = values_.find(name);
      return it == values_.end() ? nullptr : it->second.c_str();
    };
  }

 private:
  std::map<std::string, std::string> values_;
};

TEST(ConfigSources, FlagBeatsEnvironmentBeatsFileBeatsDefault) {
  std::string path = ::testing::TempDir() + "/precedence.yaml";
  {
    FILE* f = fopen(path.c_str(), "w");
    fputs(
        "flags:\n  migStrategy: single\n  plugin:\n    deviceIDStrategy: index\n"
        "    passDeviceSpecs: true\n",
        f);
    fclose(f);
  }
  FakeEnvironment env(
      std::map<std::string, std::string>{{"CONFIG_FILE", path},
                                         {"MIG_STRATEGY", "mixed"},
                                         {"DEVICE_ID_STRATEGY", "uuid"},
                                         {"DEVICE_LIST_STRATEGY", "envvar,volume-mounts"}});
  ConfigLayer flags;
  flags.mig_strategy = MigStrategy::kNone;
  absl::StatusOr<ResolvedConfig> resolved = ResolveConfig(flags, std::nullopt, env.get());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->config_file, path);
  EXPECT_EQ(resolved->config.mig_strategy, MigStrategy::kNone);             // flag
  EXPECT_EQ(resolved->config.device_id_strategy, DeviceIdStrategy::kUuid);  // env over file
  EXPECT_TRUE(resolved->config.pass_device_specs);                          // file
  EXPECT_THAT(resolved->config.device_list_strategies,
              ElementsAre(DeviceListStrategy::kEnvvar, DeviceListStrategy::kVolumeMounts));
  EXPECT_TRUE(resolved->config.fail_on_init_error);  // default
}

TEST(ConfigSources, BadEnvironmentNamesTheVariable) {
  FakeEnvironment env(std::map<std::string, std::string>{{"PASS_DEVICE_SPECS", "maybe"}});
  absl::StatusOr<ResolvedConfig> resolved = ResolveConfig({}, std::nullopt, env.get());
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().message(),
            "environment variable PASS_DEVICE_SPECS: \"maybe\" is not a boolean; use true or "
            "false");
}

TEST(ConfigFile, MpsIsReadWithTheRulesOfTimeSlicing) {
  absl::StatusOr<ConfigFile> file = Parse(
      "sharing:\n  mps:\n    renameByDefault: true\n    resources:\n"
      "    - {name: gpu, replicas: 3}\n");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(file->mps.has_value());
  EXPECT_TRUE(file->mps->rename_by_default);
  ASSERT_EQ(file->mps->resources.size(), 1u);
  EXPECT_EQ(file->mps->resources[0].name, "nvidia.com/gpu");
  EXPECT_EQ(file->mps->resources[0].replicas, 3);
  EXPECT_EQ(file->mps_line, 2);
  EXPECT_TRUE(file->time_slicing.resources.empty());
}

std::string WriteConfig(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  FILE* f = fopen(path.c_str(), "w");
  fputs(text.c_str(), f);
  fclose(f);
  return path;
}

// NVIDIA's README example for MPS: failRequestsGreaterThanOne is true, and stays true when written
// false (ignored with a warning, as NVIDIA's plugin ignores it).
TEST(ConfigSources, MpsAsNvidiaWithItsDefaults) {
  std::string path =
      WriteConfig("mps.yaml",
                  "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n"
                  "      replicas: 10\n");
  FakeEnvironment env(std::map<std::string, std::string>{{"MPS_ROOT", "/run/nvidia/mps"}});
  absl::StatusOr<ResolvedConfig> resolved = ResolveConfig({}, path, env.get());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->config.sharing_strategy(), SharingStrategy::kMps);
  EXPECT_EQ(resolved->config.mps_root, "/run/nvidia/mps");
  EXPECT_TRUE(resolved->config.mps.fail_requests_greater_than_one);
  EXPECT_FALSE(resolved->config.mps.rename_by_default);
  ASSERT_EQ(resolved->config.shared(), &resolved->config.mps);
  EXPECT_EQ(resolved->config.mps.resources[0].replicas, 10);
  EXPECT_THAT(ConfigJson(resolved->config),
              HasSubstr("\"mps\":{\"failRequestsGreaterThanOne\":true"));

  std::string lenient = WriteConfig(
      "mps-lenient.yaml",
      "flags:\n  mpsRoot: /var/mps\nsharing:\n  mps:\n    failRequestsGreaterThanOne: false\n"
      "    renameByDefault: true\n    resources:\n    - {name: gpu, replicas: 2}\n");
  resolved = ResolveConfig({}, lenient, FakeEnvironment(Vars{}).get());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_TRUE(resolved->config.mps.fail_requests_greater_than_one);
  ASSERT_EQ(resolved->warnings.size(), 1u);
  EXPECT_THAT(resolved->warnings[0],
              HasSubstr("sharing.mps.failRequestsGreaterThanOne: false is ignored"));
  EXPECT_TRUE(resolved->config.mps.rename_by_default);
  EXPECT_EQ(resolved->config.mps_root, "/var/mps");

  // The time-slicing default stays false.
  absl::StatusOr<ConfigFile> ts =
      Parse("sharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 2}\n");
  ASSERT_TRUE(ts.ok());
  EXPECT_FALSE(ts->time_slicing.fail_requests_greater_than_one);
}

TEST(ConfigSources, MpsWinsOverTimeSlicingWithAWarning) {
  std::string path =
      WriteConfig("both.yaml",
                  "sharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 4}\n"
                  "  mps:\n    resources:\n    - {name: gpu, replicas: 2}\n");
  absl::StatusOr<ResolvedConfig> resolved =
      ResolveConfig({}, path, FakeEnvironment(Vars{{"MPS_ROOT", "/run/nvidia/mps"}}).get());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->config.sharing_strategy(), SharingStrategy::kMps);
  EXPECT_EQ(resolved->config.shared()->resources[0].replicas, 2);
  ASSERT_EQ(resolved->warnings.size(), 1u);
  EXPECT_THAT(resolved->warnings[0], HasSubstr("sharing.timeSlicing: ignored because sharing.mps"));
}

TEST(ConfigSources, MpsRefusalsNameTheFileTheLineAndTheFix) {
  std::string path = WriteConfig(
      "mps-bad.yaml",
      "version: v1\nsharing:\n  mps:\n    resources:\n    - {name: gpu, replicas: 2}\n");
  absl::StatusOr<ResolvedConfig> resolved = ResolveConfig({}, path, FakeEnvironment(Vars{}).get());
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().message(),
            path +
                ":3: sharing.mps: MPS needs the MPS root shared with the control daemon; set "
                "--mps-root, MPS_ROOT or flags.mpsRoot (NVIDIA's chart uses /run/nvidia/mps)");

  ConfigLayer flags;
  flags.mig_strategy = MigStrategy::kMixed;
  resolved =
      ResolveConfig(flags, path, FakeEnvironment(Vars{{"MPS_ROOT", "/run/nvidia/mps"}}).get());
  ASSERT_FALSE(resolved.ok());
  EXPECT_THAT(resolved.status().message(),
              HasSubstr(":3: sharing.mps: MPS is not supported with migStrategy mixed"));

  resolved = ResolveConfig({}, path, FakeEnvironment(Vars{{"MPS_ROOT", "run/mps"}}).get());
  ASSERT_FALSE(resolved.ok());
  EXPECT_THAT(resolved.status().message(), HasSubstr("is not an absolute path"));
}

// Every setting of NVIDIA's v0.20 that names a feature gpunode lacks is refused, in the file and
// in the environment, with the same words; off is fine.
TEST(ConfigSources, FeaturesGpunodeLacksAreRefusedByName) {
  struct Case {
    std::string yaml;
    std::string message;
  } cases[] = {
      {"flags:\n  gdsEnabled: true\n",
       "config.yaml:2: flags.gdsEnabled: not supported by gpunode: GPUDirect Storage (gdsEnabled)"},
      {"flags:\n  mofedEnabled: true\n", "not supported by gpunode: MOFED"},
      {"flags:\n  gdrcopyEnabled: true\n", "not supported by gpunode: GDRCopy (gdrcopyEnabled)"},
      {"imex:\n  channelIDs: [0]\n", "imex.channelIDs: not supported by gpunode: IMEX channels"},
      {"imex:\n  required: true\n", "imex.required: not supported by gpunode: IMEX channels"},
      {"flags:\n  deviceDiscoveryStrategy: tegra\n",
       "not supported by gpunode: tegra device discovery"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ConfigFile> file = Parse(c.yaml);
    ASSERT_FALSE(file.ok()) << c.yaml;
    EXPECT_THAT(std::string(file.status().message()), HasSubstr(c.message));
  }
  ASSERT_TRUE(
      Parse("flags:\n  gdsEnabled: false\n  mofedEnabled: false\nimex:\n  channelIDs: []\n").ok());

  for (const auto& [name, value] : std::map<std::string, std::string>{{"GDS_ENABLED", "true"},
                                                                      {"MOFED_ENABLED", "1"},
                                                                      {"GDRCOPY_ENABLED", "t"},
                                                                      {"IMEX_REQUIRED", "true"},
                                                                      {"IMEX_CHANNEL_IDS", "0"}}) {
    absl::StatusOr<ConfigLayer> layer =
        EnvironmentLayer(FakeEnvironment(Vars{{name, value}}).get());
    ASSERT_FALSE(layer.ok()) << name;
    EXPECT_THAT(std::string(layer.status().message()),
                HasSubstr("environment variable " + name + ": not supported by gpunode: "));
  }
  EXPECT_TRUE(EnvironmentLayer(FakeEnvironment(Vars{{"GDS_ENABLED", "false"}}).get()).ok());
}

TEST(ConfigSources, NvidiaVariablesWithTwoNamesTakeTheFirstSet) {
  absl::StatusOr<ConfigLayer> layer =
      EnvironmentLayer(FakeEnvironment(Vars{{"NVIDIA_CTK_PATH", "/usr/local/bin/nvidia-ctk"},
                                            {"CONTAINER_DRIVER_ROOT", "/host-driver"},
                                            {"DRIVER_ROOT_CTR_PATH", "/driver-root"},
                                            {"DEVICE_DISCOVERY_STRATEGY", "nvml"}})
                           .get());
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_EQ(layer->nvidia_cdi_hook_path, "/usr/local/bin/nvidia-ctk");
  EXPECT_EQ(layer->container_driver_root, "/driver-root");
  EXPECT_EQ(layer->device_discovery_strategy, "nvml");
  Config config = Merge({&*layer}, {});
  EXPECT_EQ(config.nvidia_cdi_hook_path, "/usr/local/bin/nvidia-ctk");
  EXPECT_EQ(Merge({}, {}).nvidia_cdi_hook_path, "/usr/bin/nvidia-cdi-hook");
}

TEST(ConfigSources, MissingFileIsAnError) {
  FakeEnvironment env(std::map<std::string, std::string>{});
  absl::StatusOr<ResolvedConfig> resolved =
      ResolveConfig({}, std::string("/nonexistent/config.yaml"), env.get());
  ASSERT_FALSE(resolved.ok());
  EXPECT_THAT(resolved.status().message(), HasSubstr("/nonexistent/config.yaml"));
  EXPECT_EQ(resolved.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(XidPolicy, ApplicationXidsAreIgnored) {
  absl::StatusOr<health::XidPolicy> policy = health::XidPolicyFromEnvironment(nullptr, nullptr);
  ASSERT_TRUE(policy.ok());
  for (uint64_t xid : {13, 31, 43, 45, 68, 109}) EXPECT_FALSE(policy->Critical(xid)) << xid;
  for (uint64_t xid : {48, 79, 94, 95, 119}) EXPECT_TRUE(policy->Critical(xid)) << xid;
  EXPECT_EQ(health::XidMeaning(79), "GPU has fallen off the bus");
}

TEST(XidPolicy, DisableAndEnableAsNvidia) {
  EXPECT_FALSE(health::XidPolicyFromEnvironment("all", nullptr)->enabled);
  EXPECT_FALSE(health::XidPolicyFromEnvironment("xids", nullptr)->enabled);
  EXPECT_FALSE(health::XidPolicyFromEnvironment("all", "all")->enabled);
  health::XidPolicy extra = *health::XidPolicyFromEnvironment("48, 79", nullptr);
  EXPECT_FALSE(extra.Critical(48));
  EXPECT_FALSE(extra.Critical(79));
  EXPECT_FALSE(extra.Critical(13));
  EXPECT_TRUE(extra.Critical(94));
  health::XidPolicy forced = *health::XidPolicyFromEnvironment(nullptr, "13");
  EXPECT_TRUE(forced.Critical(13));
  EXPECT_FALSE(forced.Critical(31));
  EXPECT_TRUE(health::XidPolicyFromEnvironment(nullptr, "all")->Critical(31));
  absl::StatusOr<health::XidPolicy> bad = health::XidPolicyFromEnvironment("abc", nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("DP_DISABLE_HEALTHCHECKS"));
}

}  // namespace
}  // namespace gpunode::plugin_config

namespace gpunode::plugin_config {
namespace {

// NVIDIA's config-manager order: the node label, the default config, a config named default,
// the only config; the kubelet's ..data bookkeeping and directories are not configs.
TEST(ConfigDirectory, PicksAsNvidiasConfigManager) {
  std::string dir = ::testing::TempDir() + "/configs";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/..2026_01_01");
  std::ofstream(dir + "/..2026_01_01/a") << "version: v1\n";
  std::ofstream(dir + "/..2026_01_01/b") << "version: v1\n";
  std::filesystem::create_directory_symlink("..2026_01_01", dir + "/..data");
  std::filesystem::create_symlink("..data/a", dir + "/a");
  std::filesystem::create_symlink("..data/b", dir + "/b");
  EXPECT_THAT(*ConfigNames(dir), ElementsAre("a", "b"));

  absl::StatusOr<SelectedConfig> picked =
      SelectConfig(dir, {.label = "b", .default_config = std::nullopt});
  ASSERT_TRUE(picked.ok()) << picked.status();
  EXPECT_EQ(picked->path, dir + "/b");
  EXPECT_EQ(picked->why, "node label nvidia.com/device-plugin.config=b");
  picked = SelectConfig(dir, {.default_config = "a"});
  ASSERT_TRUE(picked.ok());
  EXPECT_EQ(picked->name, "a");
  // The label wins over the default; a label naming nothing is an error, not the default.
  EXPECT_EQ(SelectConfig(dir, {.label = "b", .default_config = "a"})->name, "b");
  picked = SelectConfig(dir, {.label = "mps-2", .default_config = "a"});
  ASSERT_FALSE(picked.ok());
  EXPECT_EQ(picked.status().message(),
            "node label nvidia.com/device-plugin.config=mps-2: no such config in " + dir +
                " (configs: a, b); set the label to one of them or add the key to the ConfigMap");
  picked = SelectConfig(dir, {});
  ASSERT_FALSE(picked.ok());
  EXPECT_THAT(picked.status().message(), HasSubstr("holds 2 configs (a, b) and none is selected"));

  std::ofstream(dir + "/default") << "version: v1\n";
  EXPECT_EQ(SelectConfig(dir, {})->name, "default");
  std::filesystem::remove(dir + "/default");
  std::filesystem::remove(dir + "/b");
  EXPECT_EQ(SelectConfig(dir, {})->why, "the only config");
}

TEST(ConfigDirectory, ResolveConfigReadsTheSelectedFileAndCONFIG_DEFAULT) {
  std::string dir = ::testing::TempDir() + "/configs-resolve";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/none") << "version: v1\n";
  std::ofstream(dir + "/ts4")
      << "sharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 4}\n";
  FakeEnvironment env(Vars{{"CONFIG_FILE", dir}, {"CONFIG_DEFAULT", "ts4"}});
  absl::StatusOr<ResolvedConfig> resolved = ResolveConfig({}, std::nullopt, env.get());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->config_file, dir + "/ts4");
  EXPECT_EQ(resolved->config.time_slicing.resources[0].replicas, 4);
  resolved =
      ResolveConfig({}, std::nullopt, env.get(), {.label = "none", .default_config = std::nullopt});
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_TRUE(resolved->config.time_slicing.resources.empty());
  EXPECT_EQ(resolved->selected_by, "node label nvidia.com/device-plugin.config=none");
}

// Every variable of the plugin's config and process is read through the injected Environment:
// a flag wins over its variable, a variable over the file, the file over the default.
TEST(ConfigSources, ConfigFileAndDefaultConfigFlagBeatsEnvironment) {
  FakeEnvironment env(Vars{{"CONFIG_FILE", "/env/config.yaml"}, {"CONFIG_DEFAULT", "ts4"}});
  EXPECT_EQ(ConfigFilePath(std::string("/flag/config.yaml"), env.get()), "/flag/config.yaml");
  EXPECT_EQ(ConfigFilePath(std::nullopt, env.get()), "/env/config.yaml");
  EXPECT_EQ(ConfigFilePath(std::string(""), env.get()), "/env/config.yaml");
  EXPECT_EQ(ConfigFilePath(std::nullopt, FakeEnvironment(Vars{{"CONFIG_FILE", ""}}).get()), "");
  EXPECT_EQ(ConfigFilePath(std::nullopt, FakeEnvironment(Vars{}).get()), "");
  EXPECT_EQ(DefaultConfigName(std::string("none"), env.get()), "none");
  EXPECT_EQ(DefaultConfigName(std::nullopt, env.get()), "ts4");
  EXPECT_EQ(DefaultConfigName(std::nullopt, FakeEnvironment(Vars{{"CONFIG_DEFAULT", ""}}).get()),
            std::nullopt);

  // --config-file beats CONFIG_FILE in ResolveConfig too.
  std::string flag_file = WriteConfig("flag.yaml", "flags:\n  migStrategy: single\n");
  std::string env_file = WriteConfig("env.yaml", "flags:\n  migStrategy: mixed\n");
  absl::StatusOr<ResolvedConfig> resolved =
      ResolveConfig({}, flag_file, FakeEnvironment(Vars{{"CONFIG_FILE", env_file}}).get());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->config_file, flag_file);
  EXPECT_EQ(resolved->config.mig_strategy, MigStrategy::kSingle);
}

TEST(ConfigSources, FlagOrEnvironmentNamesWhereTheValueCameFrom) {
  FakeEnvironment env(Vars{{"MIG_STRATEGY", ""}, {"GFD_MIG_STRATEGY", "mixed"}});
  std::optional<SettingText> text = FlagOrEnvironment("--mig-strategy", std::nullopt, env.get(),
                                                      {"MIG_STRATEGY", "GFD_MIG_STRATEGY"});
  ASSERT_TRUE(text.has_value());
  // An empty variable counts as unset: the next one is read.
  EXPECT_EQ(text->text, "mixed");
  EXPECT_EQ(text->source, "environment variable GFD_MIG_STRATEGY");
  text = FlagOrEnvironment("--mig-strategy", std::string("single"), env.get(),
                           {"MIG_STRATEGY", "GFD_MIG_STRATEGY"});
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->text, "single");
  EXPECT_EQ(text->source, "--mig-strategy");
  EXPECT_FALSE(FlagOrEnvironment("--mig-strategy", std::nullopt, env.get(), {"MIG_STRATEGY"}));
}

TEST(ProcessSettings, DefaultsWhenNothingIsGiven) {
  absl::StatusOr<ProcessSettings> settings =
      ResolveProcessSettings({}, FakeEnvironment(Vars{}).get());
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->kubelet_socket, std::nullopt);
  EXPECT_FALSE(settings->cdi_hooks_disabled);
  EXPECT_TRUE(settings->cdi_feature_flags.empty());
  EXPECT_EQ(settings->disable_healthchecks, std::nullopt);
  EXPECT_EQ(settings->enable_healthchecks, std::nullopt);
  EXPECT_EQ(settings->health_recovery_period, std::nullopt);
  EXPECT_EQ(settings->health_flap_limit, std::nullopt);
}

TEST(ProcessSettings, EnvironmentWhenNoFlag) {
  FakeEnvironment env(Vars{{"KUBELET_SOCKET", "/run/kubelet.sock"},
                           {"CDI_DISABLE_HOOKS", "all"},
                           {"CDI_FEATURE_FLAGS", "a, b"},
                           {"DP_DISABLE_HEALTHCHECKS", "79"},
                           {"DP_ENABLE_HEALTHCHECKS", "13"},
                           {"HEALTH_RECOVERY_PERIOD", "90s"},
                           {"HEALTH_FLAP_LIMIT", "5"}});
  absl::StatusOr<ProcessSettings> settings = ResolveProcessSettings({}, env.get());
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->kubelet_socket, "/run/kubelet.sock");
  EXPECT_TRUE(settings->cdi_hooks_disabled);
  EXPECT_THAT(settings->cdi_feature_flags, ElementsAre("a", "b"));
  EXPECT_EQ(settings->disable_healthchecks, "79");
  EXPECT_EQ(settings->enable_healthchecks, "13");
  EXPECT_EQ(settings->health_recovery_period, absl::Seconds(90));
  EXPECT_EQ(settings->health_flap_limit, 5);
}

TEST(ProcessSettings, FlagBeatsEnvironment) {
  FakeEnvironment env(Vars{{"KUBELET_SOCKET", "/run/kubelet.sock"},
                           {"CDI_DISABLE_HOOKS", "update-ldcache"},
                           {"CDI_FEATURE_FLAGS", "a"},
                           {"HEALTH_RECOVERY_PERIOD", "often"},
                           {"HEALTH_FLAP_LIMIT", "-1"}});
  absl::StatusOr<ProcessSettings> settings = ResolveProcessSettings({.kubelet_socket = "",
                                                                     .cdi_disable_hooks = {"all"},
                                                                     .cdi_feature_flags = {"x"},
                                                                     .health_recovery_period = "0",
                                                                     .health_flap_limit = "0"},
                                                                    env.get());
  // The variables' bad values are never read: the flags win.
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->kubelet_socket, "");  // serves without registering
  EXPECT_TRUE(settings->cdi_hooks_disabled);
  EXPECT_THAT(settings->cdi_feature_flags, ElementsAre("x"));
  EXPECT_EQ(settings->health_recovery_period, absl::ZeroDuration());  // never recover
  EXPECT_EQ(settings->health_flap_limit, 0);                          // no limit
}

TEST(ProcessSettings, EmptyVariablesAreUnsetButAnEmptyKubeletSocketIsNot) {
  FakeEnvironment env(Vars{{"KUBELET_SOCKET", ""},
                           {"CDI_DISABLE_HOOKS", ""},
                           {"DP_DISABLE_HEALTHCHECKS", ""},
                           {"HEALTH_RECOVERY_PERIOD", ""},
                           {"HEALTH_FLAP_LIMIT", ""}});
  absl::StatusOr<ProcessSettings> settings = ResolveProcessSettings({}, env.get());
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->kubelet_socket, "");  // NVIDIA's meaning: serve without registering
  EXPECT_FALSE(settings->cdi_hooks_disabled);
  EXPECT_EQ(settings->disable_healthchecks, std::nullopt);
  EXPECT_EQ(settings->health_recovery_period, std::nullopt);
  EXPECT_EQ(settings->health_flap_limit, std::nullopt);
}

TEST(ProcessSettings, KubeletSocketDefaultsUnderTheKubeletDirectory) {
  ProcessSettings settings;
  EXPECT_EQ(KubeletSocket(settings, "/var/lib/kubelet/device-plugins"),
            "/var/lib/kubelet/device-plugins/kubelet.sock");
  settings.kubelet_socket = "";
  EXPECT_EQ(KubeletSocket(settings, "/var/lib/kubelet/device-plugins"), "");
  settings.kubelet_socket = "/run/kubelet.sock";
  EXPECT_EQ(KubeletSocket(settings, "/var/lib/kubelet/device-plugins"), "/run/kubelet.sock");
}

// gpunode's --driver-root stands for NVIDIA's: it sets nvidiaDriverRoot unless
// --nvidia-driver-root does, and it names where NVML is loaded from over the config.
TEST(DriverRoot, GlobalFlagSetsTheConfigsUnlessItsOwnFlagDoes) {
  ConfigLayer flags;
  ApplyDriverRootFlag("/", flags);
  EXPECT_EQ(flags.nvidia_driver_root, std::nullopt);
  ApplyDriverRootFlag("/run/nvidia/driver", flags);
  EXPECT_EQ(flags.nvidia_driver_root, "/run/nvidia/driver");
  flags.nvidia_driver_root = "/host";
  ApplyDriverRootFlag("/run/nvidia/driver", flags);
  EXPECT_EQ(flags.nvidia_driver_root, "/host");
}

TEST(DriverRoot, NvmlFromTheFlagThenTheContainersMountThenTheConfigsRoot) {
  Config config;
  config.nvidia_driver_root = "/run/nvidia/driver";
  EXPECT_EQ(NvmlDriverRoot("/", config), "/run/nvidia/driver");
  config.container_driver_root = "/driver-root";
  EXPECT_EQ(NvmlDriverRoot("/", config), "/driver-root");
  EXPECT_EQ(NvmlDriverRoot("/opt/driver", config), "/opt/driver");
}

// A bad value is one line naming the flag or the variable it came from, the value and the fix.
TEST(ProcessSettings, BadValuesNameTheirSourceAndTheFix) {
  struct Case {
    ProcessFlags flags;
    Vars env;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{},
            {{"HEALTH_RECOVERY_PERIOD", "often"}},
            "environment variable HEALTH_RECOVERY_PERIOD \"often\": not a duration; give e.g. "
            "500ms, 30s, 5m or 1h30m (a bare number is seconds)"},
           {{.health_recovery_period = "often"},
            {},
            "--health-recovery-period \"often\": not a duration; give e.g. 500ms, 30s, 5m or "
            "1h30m (a bare number is seconds)"},
           {{},
            {{"HEALTH_RECOVERY_PERIOD", "48h"}},
            "environment variable HEALTH_RECOVERY_PERIOD 48h: out of range; give a duration "
            "from 0 to 24h"},
           {{},
            {{"HEALTH_FLAP_LIMIT", "often"}},
            "environment variable HEALTH_FLAP_LIMIT: \"often\" is not a count; give a whole "
            "number such as 3 (0 = no limit)"},
           {{.health_flap_limit = "-1"},
            {},
            "--health-flap-limit: \"-1\" is not a count; give a whole number such as 3 (0 = no "
            "limit)"},
           {{},
            {{"CDI_DISABLE_HOOKS", "update-ldcache"}},
            "environment variable CDI_DISABLE_HOOKS: not supported by gpunode: disabling "
            "update-ldcache or create-symlinks alone; give all (both) or neither"},
           {{.cdi_disable_hooks = {"create-symlinks"}},
            {},
            "--cdi-disable-hooks: not supported by gpunode: disabling update-ldcache or "
            "create-symlinks alone; give all (both) or neither"},
       }) {
    absl::StatusOr<ProcessSettings> settings =
        ResolveProcessSettings(c.flags, FakeEnvironment(c.env).get());
    ASSERT_FALSE(settings.ok()) << c.message;
    EXPECT_EQ(settings.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(settings.status().message(), c.message);
  }
}

}  // namespace
}  // namespace gpunode::plugin_config
