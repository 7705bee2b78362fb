// `gpunode mig profiles|apply|assert` as operators run them: the real binary on the simulator,
// with GPUNODE_SIM_STATE carrying the node from one command to the next, on every profile table
// and on the layouts NVIDIA's mig-parted ships.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubelet_double.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"

namespace gpunode {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

const std::string kFixtures = build_paths::kMigFixtures;
const std::string kCapable = kFixtures + "/mig-capable-gpus.yaml";
const std::string kMigParted = kFixtures + "/mig-parted-config-default.yaml";

// One simulated node whose MIG state lives in a file, as a real node's lives in the GPUs.
class Node {
 public:
  explicit Node(std::string spec) : spec_(std::move(spec)), state_(dir_.path() + "/state") {}

  testing::ProcessResult Run(std::vector<std::string> args,
                             std::vector<std::string> extra_env = {}) const {
    std::vector<std::string> argv = {build_paths::kBinary, "--sim", spec_};
    argv.insert(argv.end(), args.begin(), args.end());
    extra_env.push_back("GPUNODE_SIM_STATE=" + state_);
    return testing::RunProcess(argv, extra_env);
  }
  testing::ProcessResult Apply(const std::string& config, const std::string& file = kMigParted,
                               std::vector<std::string> more = {},
                               std::vector<std::string> extra_env = {}) const {
    std::vector<std::string> args = {"mig", "apply", "-f", file, "--config", config};
    args.insert(args.end(), more.begin(), more.end());
    return Run(args, extra_env);
  }
  testing::ProcessResult Assert(const std::string& config,
                                const std::string& file = kMigParted) const {
    return Run({"mig", "assert", "-f", file, "--config", config});
  }
  json Inventory() const {
    testing::ProcessResult r = Run({"inventory", "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
  // Profile names of GPU `index`'s MIG devices, sorted.
  std::vector<std::string> Devices(unsigned index) const {
    std::vector<std::string> names;
    json inventory = Inventory();
    for (const json& mig : inventory["gpus"][index]["mig_devices"])
      names.push_back(mig["profile"].get<std::string>());
    std::sort(names.begin(), names.end());
    return names;
  }
  const std::string& StatePath() const { return state_; }
  std::string State() const {
    std::ifstream in(state_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::string Write(const std::string& name, const std::string& text) const {
    return dir_.Write(name, text);
  }

 private:
  testing::TempDir dir_{"gpunode-mig-test"};
  std::string spec_;
  std::string state_;
};

std::vector<std::string> Repeat(const std::string& name, size_t n) {
  return std::vector<std::string>(n, name);
}

TEST(MigProfiles, ListEachTableWithPlacementsOnceMigIsOn) {
  Node node(kCapable);
  testing::ProcessResult before = node.Run({"mig", "profiles"});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_THAT(before.out, HasSubstr("GPU 0 (NVIDIA A100-SXM4-40GB): MIG disabled; NVML lists "
                                    "profiles only while MIG is on"));
  ASSERT_EQ(node.Apply("all-enabled").exit_code, 0);
  testing::ProcessResult table = node.Run({"mig", "profiles"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("GPU 1 (NVIDIA A100-SXM4-80GB): MIG enabled"));
  EXPECT_THAT(table.out, HasSubstr("3g.40gb        9       2/2"));
  EXPECT_THAT(table.out, HasSubstr("0:4 4:4"));
  testing::ProcessResult r = node.Run({"mig", "profiles", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json gpus = json::parse(r.out);
  ASSERT_EQ(gpus.size(), 6u);
  std::vector<std::vector<std::string>> names = {
      {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb", "1g.5gb+me", "1g.10gb"},
      {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.10gb+me", "1g.20gb"},
      {"1g.6gb", "2g.12gb", "4g.24gb", "1g.6gb+me", "2g.12gb+me"},
      {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.10gb+me", "1g.20gb"},
      {"1g.12gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb", "1g.12gb+me", "1g.24gb"},
      {"1g.18gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb", "1g.18gb+me", "1g.35gb"}};
  for (size_t g = 0; g < gpus.size(); ++g) {
    std::vector<std::string> listed;
    for (const json& p : gpus[g]["profiles"]) listed.push_back(p["name"].get<std::string>());
    EXPECT_EQ(listed, names[g]) << "GPU " << g;
  }
  // Memory of the smallest and the largest profile, as `nvidia-smi mig -lgip` prints them (GiB
  // x 1024; sim/SOURCES.md names each table's source).
  std::vector<std::pair<unsigned, unsigned>> memory = {
      {4864, 40192}, {9728, 80896}, {5952, 24000}, {9984, 81152}, {11008, 95360}, {16384, 143104}};
  for (size_t g = 0; g < gpus.size(); ++g) {
    const json& profiles = gpus[g]["profiles"];
    EXPECT_EQ(profiles[0]["memory_mib"], memory[g].first) << "GPU " << g;
    EXPECT_EQ(profiles[profiles.size() == 5 ? 2 : 4]["memory_mib"], memory[g].second)
        << "GPU " << g;
  }
  const json& h100_7g = gpus[3]["profiles"][4];
  EXPECT_EQ(h100_7g["id"], 0);
  EXPECT_EQ(h100_7g["multiprocessors"], 132);
  EXPECT_EQ(h100_7g["placements"], json::parse(R"([{"start":0,"size":8}])"));
}

// Every layout of mig-parted's default config that names A100 80GB or H100 80GB profiles, on
// both GPUs of a node: what the inventory then shows.
TEST(MigApply, EveryMigPartedLayoutForA100AndH100) {
  const std::string spec = kFixtures + "/a100-h100.yaml";
  struct Layout {
    std::string config;
    std::vector<std::string> devices;  // sorted
    bool enabled = true;
  };
  std::vector<Layout> layouts = {
      {"all-1g.10gb", Repeat("1g.10gb", 7)},
      // gpunode names MIG devices from their attributes, as go-nvlib's name rule does; the
      // media extensions of a +me instance do not show in the name.
      {"all-1g.10gb.me", {"1g.10gb"}},
      {"all-1g.20gb", Repeat("1g.20gb", 4)},
      {"all-2g.20gb", Repeat("2g.20gb", 3)},
      {"all-3g.40gb", Repeat("3g.40gb", 2)},
      {"all-4g.40gb", {"4g.40gb"}},
      {"all-7g.80gb", {"7g.80gb"}},
      {"all-balanced", {"1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"}},
      {"all-enabled", {}},
      {"all-disabled", {}, false},
  };
  Node node(spec);
  for (const Layout& layout : layouts) {
    SCOPED_TRACE(layout.config);
    testing::ProcessResult r = node.Apply(layout.config);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    json inventory = node.Inventory();
    for (unsigned g = 0; g < 2; ++g) {
      EXPECT_EQ(inventory["gpus"][g]["mig_enabled"], layout.enabled);
      EXPECT_EQ(node.Devices(g), layout.devices) << "GPU " << g;
    }
    testing::ProcessResult check = node.Assert(layout.config);
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
    // Applying it again changes nothing and says so.
    std::string state = node.State();
    testing::ProcessResult again = node.Apply(layout.config);
    EXPECT_EQ(again.exit_code, 0);
    EXPECT_THAT(again.out, HasSubstr("already has MIG config \"" + layout.config + "\""));
    EXPECT_EQ(node.State(), state);
  }
}

TEST(MigApply, BalancedOnEveryProductTable) {
  Node node(kCapable);
  testing::ProcessResult r = node.Apply("all-balanced");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(node.Devices(0), (std::vector<std::string>{"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"}));
  EXPECT_EQ(node.Devices(1),
            (std::vector<std::string>{"1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"}));
  EXPECT_EQ(node.Devices(2), (std::vector<std::string>{"1g.6gb", "1g.6gb", "2g.12gb"}));
  EXPECT_EQ(node.Devices(3),
            (std::vector<std::string>{"1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"}));
  EXPECT_EQ(node.Devices(4),
            (std::vector<std::string>{"1g.12gb", "1g.12gb", "2g.24gb", "3g.47gb"}));
  EXPECT_EQ(node.Devices(5),
            (std::vector<std::string>{"1g.18gb", "1g.18gb", "2g.35gb", "3g.71gb"}));
  EXPECT_EQ(node.Assert("all-balanced").exit_code, 0);
  // A layout for another product does not hold here: assert says where and exits 1.
  testing::ProcessResult other = node.Assert("all-3g.40gb");
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_THAT(other.out, HasSubstr("GPU 1 (NVIDIA A100-SXM4-80GB): has 2x 1g.10gb + 1x 2g.20gb + "
                                   "1x 3g.40gb, wanted 2x 3g.40gb"));
  EXPECT_THAT(other.out, HasSubstr("GPU 0 (NVIDIA A100-SXM4-40GB): profile \"3g.40gb\" is not one "
                                   "of this GPU's"));
}

TEST(MigApply, DryRunPrintsThePlanAndChangesNothing) {
  Node node(kFixtures + "/a100-h100.yaml");
  ASSERT_EQ(node.Apply("all-enabled").exit_code, 0);
  std::string state = node.State();
  testing::ProcessResult r = node.Apply("all-balanced", kMigParted, {"--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("would GPU 0 (NVIDIA A100-SXM4-80GB): create 3g.40gb at 4:4"));
  EXPECT_THAT(r.out, HasSubstr("would GPU 1 (NVIDIA H100 80GB HBM3): create 1g.10gb at 3:1"));
  EXPECT_EQ(node.State(), state);
  EXPECT_EQ(node.Assert("all-balanced").exit_code, 1);
}

TEST(MigApply, ALayoutThatCannotFitIsRefusedBeforeAnythingChanges) {
  Node node(kFixtures + "/a100-h100.yaml");
  ASSERT_EQ(node.Apply("all-2g.20gb").exit_code, 0);
  std::string state = node.State();
  std::string config = node.Write("config.yaml", R"(version: v1
mig-configs:
  too-big:
    - devices: [0]
      mig-enabled: true
      mig-devices: {"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1}
  unknown:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.20gb": 2}
)");
  testing::ProcessResult r = node.Apply("too-big", config);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("GPU 0 (NVIDIA A100-SXM4-80GB): 1x 4g.40gb + 1x 3g.40gb + 1x "
                               "1g.10gb does not fit: no free placement for 1g.10gb"));
  EXPECT_EQ(node.State(), state);
  r = node.Apply("unknown", config);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("GPU 0 (NVIDIA A100-SXM4-80GB): profile \"3g.20gb\" is not one of "
                               "this GPU's"));
  EXPECT_EQ(node.State(), state);
  r = node.Apply("no-such-layout", config);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no config \"no-such-layout\" in mig-configs; known: too-big, "
                               "unknown"));
}

TEST(MigApply, ProcessesOnAGpuAreNamedAndProtectedUnlessForced) {
  Node node("h200-1");  // pid 2210 holds 20 GiB
  testing::ProcessResult r = node.Apply("all-1g.18gb");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("GPU 0 (NVIDIA H200) is used by pid 2210"));
  EXPECT_THAT(r.err, HasSubstr("nothing changed"));
  EXPECT_EQ(node.State(), "");  // nothing was ever saved
  // Forced, the mode change waits for a GPU reset: said so, exit 1, the mode pending.
  r = node.Apply("all-1g.18gb", kMigParted, {"--force"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("GPU 0 (NVIDIA H200): MIG mode enable is pending"));
  EXPECT_THAT(r.out, HasSubstr("nvidia-smi -r -i 0"));
  testing::ProcessResult profiles = node.Run({"mig", "profiles"});
  EXPECT_THAT(profiles.out, HasSubstr("MIG disabled (enabled pending a GPU reset)"));
}

TEST(MigApply, AFailureHalfWayRollsBackToTheLayoutThatWasThere) {
  Node node(kFixtures + "/a100-h100.yaml");
  ASSERT_EQ(node.Apply("all-3g.40gb").exit_code, 0);
  std::vector<std::string> before0 = node.Devices(0), before1 = node.Devices(1);
  // all-balanced: per GPU 2 CI and 2 GI destroyed, then 4 GIs + 4 CIs; change 14 is on GPU 1.
  testing::ProcessResult r =
      node.Apply("all-balanced", kMigParted, {}, {"GPUNODE_SIM_MIG_FAIL_AT=14"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.err, HasSubstr("rolled back: GPU 1 (NVIDIA H100 80GB HBM3) restored, GPU 0 "
                               "(NVIDIA A100-SXM4-80GB) restored"));
  EXPECT_EQ(node.Devices(0), before0);
  EXPECT_EQ(node.Devices(1), before1);
  EXPECT_EQ(node.Assert("all-3g.40gb").exit_code, 0);
}

// What the other roles make of an applied layout, each in its own process reading the state.
TEST(MigApply, LabelsAndMetricsShowTheAppliedLayout) {
  Node node(kFixtures + "/a100-h100.yaml");
  ASSERT_EQ(node.Apply("all-balanced").exit_code, 0);
  testing::ProcessResult mixed =
      node.Run({"labels", "--oneshot", "-o", "-", "--mig-strategy", "mixed"});
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_THAT(mixed.out, HasSubstr("nvidia.com/mig-1g.10gb.count=4\n"));
  EXPECT_THAT(mixed.out, HasSubstr("nvidia.com/mig-2g.20gb.count=2\n"));
  EXPECT_THAT(mixed.out, HasSubstr("nvidia.com/mig-3g.40gb.count=2\n"));
  EXPECT_THAT(mixed.out, HasSubstr("nvidia.com/mig.strategy=mixed\n"));
  testing::ProcessResult metrics = node.Run({"exporter", "--once"});
  ASSERT_EQ(metrics.exit_code, 0) << metrics.err;
  EXPECT_THAT(metrics.out, HasSubstr("GPU_I_PROFILE=\"3g.40gb\""));
  EXPECT_THAT(metrics.out, HasSubstr("GPU_I_PROFILE=\"2g.20gb\""));
  // The single strategy wants one profile on every GPU: all-1g.10gb gives 14 MIG GPUs.
  ASSERT_EQ(node.Apply("all-1g.10gb").exit_code, 0);
  testing::ProcessResult single =
      node.Run({"labels", "--oneshot", "-o", "-", "--mig-strategy", "single"});
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_THAT(single.out, HasSubstr("nvidia.com/gpu.count=14\n"));
  EXPECT_THAT(single.out, HasSubstr("nvidia.com/mig.strategy=single\n"));
}

// The device plugin started after `mig apply` serves the layout: one resource per profile under
// the mixed strategy, each MIG device of the layout once, all healthy.
TEST(MigApply, TheDevicePluginServesTheAppliedLayout) {
  Node node(kFixtures + "/a100-h100.yaml");
  ASSERT_EQ(node.Apply("all-balanced").exit_code, 0);
  char pattern[] = "/tmp/gpunode-mig-dp-XXXXXX";  // unix socket paths must stay short
  ASSERT_NE(mkdtemp(pattern), nullptr);
  std::string dir = pattern;
  testing::KubeletDouble kubelet(dir);
  ASSERT_TRUE(kubelet.Start());
  ASSERT_FALSE(node.State().empty());
  testing::BackgroundProcess plugin(
      {build_paths::kBinary, "--sim", kFixtures + "/a100-h100.yaml", "device-plugin",
       "--kubelet-dir", dir, "--cdi-spec-dir", dir, "--mig-strategy", "mixed"},
      testing::BackgroundProcess::Options{.extra_env = {"GPUNODE_SIM_STATE=" + node.StatePath()},
                                          .stderr_path = dir + "/plugin.log"});
  auto healthy = [](size_t count) {
    return [count](const std::vector<testing::DeviceState>& devices) {
      return devices.size() == count &&
             std::all_of(devices.begin(), devices.end(),
                         [](const testing::DeviceState& d) { return d.health == "Healthy"; });
    };
  };
  constexpr std::chrono::milliseconds kWait{15000};
  // all-balanced on an A100 80GB and an H100: 2x 1g.10gb, 1x 2g.20gb, 1x 3g.40gb on each.
  for (const auto& [resource, count] :
       std::vector<std::pair<std::string, size_t>>{{"nvidia.com/mig-1g.10gb", 4},
                                                   {"nvidia.com/mig-2g.20gb", 2},
                                                   {"nvidia.com/mig-3g.40gb", 2}}) {
    EXPECT_TRUE(kubelet.WaitForDevices(resource, healthy(count), kWait).has_value())
        << resource << "\n"
        << plugin.Log();
  }
  EXPECT_EQ(kubelet.RegistrationCount("nvidia.com/gpu"), 0);
  EXPECT_EQ(plugin.Stop(SIGTERM), 0);
  kubelet.Stop();
  std::filesystem::remove_all(dir);
}

TEST(MigApply, BadConfigFilesAreOneLineNamingFileAndField) {
  Node node(kCapable);
  struct Case {
    std::string text;
    std::string error;
  };
  std::vector<Case> cases = {
      {"version: v2\nmig-configs: {}\n", ":1: version: must be v1"},
      {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: maybe\n",
       ":5: mig-enabled: \"maybe\" is not true or false"},
      {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
       "      mig-devices: {\"1g.10gb\": -1}\n",
       "mig-devices: \"-1\" is not a count from 0 to 8"},
      {"version: v1\nmig-configs:\n  a:\n    - device-filter: 0x20B2\n      devices: all\n"
       "      mig-enabled: false\n",
       ":4: device-filter: \"0x20B2\" is not a PCI id"},
      {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enable: true\n",
       "unknown field \"mig-enable\""},
      {"version: v1\nmig-configs: [\n", "not valid YAML"},
  };
  for (const Case& c : cases) {
    std::string file = node.Write("bad.yaml", c.text);
    testing::ProcessResult r = node.Apply("a", file);
    EXPECT_EQ(r.exit_code, 2) << c.text;
    EXPECT_THAT(r.err, HasSubstr(file)) << c.text;
    EXPECT_THAT(r.err, HasSubstr(c.error)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  testing::ProcessResult missing = node.Apply("a", node.Write("x", "") + ".missing");
  EXPECT_EQ(missing.exit_code, 2);
}

// deploy/mig-manager/config.yaml is the ConfigMap the manager mounts: `mig apply -f` reads its one
// data key, as the manager does from the volume; errors name the key and the line within it, and
// a ConfigMap of several keys is refused naming them.
TEST(MigApply, TheShippedConfigMapIsReadThroughItsDataKey) {
  Node node("a100-mig");
  testing::ProcessResult r = node.Apply(
      "all-1g.10gb", std::string(build_paths::kSourceDir) + "/deploy/mig-manager/config.yaml",
      {"--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("create 1g.10gb"));

  testing::TempDir dir("gpunode-mig-configmap");
  std::string bad = dir.Write("layouts.yaml",
                              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: layouts\ndata:\n"
                              "  config.yaml: |\n    version: v2\n");
  r = node.Apply("all-1g.10gb", bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("layouts.yaml[config.yaml]:1"));
  EXPECT_THAT(r.err, HasSubstr("version: must be v1"));
  std::string two = dir.Write("two.yaml",
                              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two\ndata:\n"
                              "  a.yaml: \"version: v1\"\n  b.yaml: \"version: v1\"\n");
  r = node.Apply("all-1g.10gb", two);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("this is a ConfigMap (two), not a MIG config, and its data keys "
                               "are a.yaml, b.yaml"));
}

}  // namespace
}  // namespace gpunode
