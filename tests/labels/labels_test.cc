// `gpunode labels` as users run it: the real binary on every built-in profile and every real
// capture, with the device plugin's sharing configs, MIG strategies, the stable scheme, and bad
// input.
#include <signal.h>
#include <sys/stat.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "build_paths.h"
#include "captures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "labels/sanitize.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"
#include "test_support.h"

namespace gpunode {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;
namespace fs = std::filesystem;
using Labels = std::map<std::string, std::string>;

constexpr std::chrono::milliseconds kWait{15000};
const std::string kFixtures = build_paths::kFixturesDir;
const std::string kConfigs = kFixtures + "/metrics/labels";

testing::ProcessResult Gpunode(const std::vector<std::string>& args,
                               const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {build_paths::kBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProcess(argv, env);
}

Labels Parse(const std::string& text) {
  Labels labels;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    EXPECT_NE(eq, std::string::npos) << line;
    if (eq == std::string::npos) continue;
    EXPECT_FALSE(labels.contains(line.substr(0, eq))) << "duplicate " << line;
    labels[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return labels;
}

// Runs `labels --oneshot` into a file and returns what it wrote.
Labels LabelsOf(const std::vector<std::string>& global, const std::vector<std::string>& extra = {},
                const std::vector<std::string>& env = {}) {
  testing::TempDir dir("gpunode-labels");
  std::string out = dir.path() + "/gfd";
  std::vector<std::string> args = global;
  args.insert(args.end(), {"labels", "--oneshot", "--output", out});
  args.insert(args.end(), extra.begin(), extra.end());
  testing::ProcessResult r = Gpunode(args, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "");
  // Written atomically: only the file is left in the directory.
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    ++entries;
    EXPECT_EQ(entry.path().filename(), "gfd");
  }
  EXPECT_EQ(entries, 1);
  EXPECT_EQ(fs::status(out).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
  return Parse(testing::ReadText(out));
}

json Inventory(const std::string& spec) {
  testing::ProcessResult r = Gpunode({"--sim", spec, "inventory", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

void ExpectValidKubernetesLabels(const Labels& labels) {
  for (const auto& [key, value] : labels) {
    EXPECT_TRUE(labels::IsValidLabelValue(value)) << key << "=" << value;
    std::string name = key.substr(key.find('/') + 1);
    EXPECT_LE(name.size(), 63u) << key;
    EXPECT_TRUE(labels::IsValidLabelValue(name) && !name.empty()) << key;
  }
}

// What GFD would say about a node, from the inventory of the same spec.
void ExpectGfdLabelsMatchInventory(const std::string& spec, const Labels& labels) {
  json inv = Inventory(spec);
  ExpectValidKubernetesLabels(labels);
  const json& gpus = inv["gpus"];
  ASSERT_FALSE(gpus.empty());
  EXPECT_EQ(labels.at("nvidia.com/gpu.present"), "true");
  EXPECT_EQ(labels.at("nvidia.com/gpu.count"), std::to_string(gpus.size()));
  const json* model = &gpus[0];
  for (const json& gpu : gpus) {
    if (gpu["mig_enabled"] != true) {
      model = &gpu;
      break;
    }
  }
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"),
            labels::SanitizeLabelValue((*model)["name"].get<std::string>()));
  if ((*model)["memory_total_mib"].is_null()) {
    EXPECT_FALSE(labels.contains("nvidia.com/gpu.memory")) << "GFD leaves out an unknown size";
  } else {
    EXPECT_EQ(labels.at("nvidia.com/gpu.memory"),
              std::to_string((*model)["memory_total_mib"].get<int>()));
  }
  EXPECT_EQ(labels.at("nvidia.com/gpu.replicas"), (*model)["mig_enabled"] == true ? "0" : "1");
  EXPECT_EQ(labels.at("nvidia.com/gpu.sharing-strategy"), "none");
  // Family and compute capability come together, or not at all (a GPU that does not say).
  EXPECT_EQ(labels.contains("nvidia.com/gpu.family"),
            labels.contains("nvidia.com/gpu.compute.major"));
  bool mig_capable = false;
  for (const json& gpu : gpus) mig_capable |= !gpu["mig_enabled"].is_null();
  EXPECT_EQ(labels.at("nvidia.com/mig.capable"), mig_capable ? "true" : "false");
  EXPECT_FALSE(labels.contains("nvidia.com/mig.strategy"));
  if (inv["driver_version"].is_null()) {
    EXPECT_FALSE(labels.contains("nvidia.com/cuda.driver-version.full"));
  } else {
    std::string driver = inv["driver_version"];
    EXPECT_EQ(labels.at("nvidia.com/cuda.driver-version.full"), driver);
    EXPECT_EQ(labels.at("nvidia.com/cuda.driver-version.major"),
              driver.substr(0, driver.find('.')));
    EXPECT_EQ(labels.at("nvidia.com/cuda.driver.major"), driver.substr(0, driver.find('.')));
  }
  if (inv["cuda_driver_version"].is_null()) {
    EXPECT_FALSE(labels.contains("nvidia.com/cuda.runtime-version.full"));
  } else {
    // GFD's "runtime" version is the driver's CUDA version.
    EXPECT_EQ(labels.at("nvidia.com/cuda.runtime-version.full"), inv["cuda_driver_version"]);
  }
  long stamp = std::stol(labels.at("nvidia.com/gfd.timestamp"));
  EXPECT_NEAR(static_cast<double>(stamp), static_cast<double>(std::time(nullptr)), 60);
  EXPECT_EQ(labels.at("nvidia.com/gpu.machine"), "unknown");
}

// A host root with nothing in it: no machine type file, no PCI tree.
const std::string& EmptyHostRoot() {
  static const testing::TempDir kDir("gpunode-empty-host");
  return kDir.path();
}

class BuiltinProfile : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(BuiltinProfile, GfdLabels) {
  const auto& [profile, family] = GetParam();
  Labels labels = LabelsOf({"--sim", profile, "--host-root", EmptyHostRoot()});
  ExpectGfdLabelsMatchInventory(profile, labels);
  EXPECT_EQ(labels.at("nvidia.com/gpu.family"), family);
}

INSTANTIATE_TEST_SUITE_P(Labels, BuiltinProfile,
                         ::testing::Values(std::pair{"dgx-h100", "hopper"},
                                           std::pair{"dgx1-v100", "volta"},
                                           std::pair{"a10-pcie-4", "ampere"},
                                           std::pair{"a100-mig", "ampere"},
                                           std::pair{"h200-1", "hopper"}),
                         [](const auto& info) {
                           std::string name = info.param.first;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

class Capture : public ::testing::TestWithParam<std::string> {};

TEST_P(Capture, GfdLabels) {
  std::string spec = kFixtures + "/nvidia-smi-xml/" + GetParam();
  Labels labels = LabelsOf({"--sim", spec, "--host-root", EmptyHostRoot()});
  ExpectGfdLabelsMatchInventory(spec, labels);
  // Under the mixed strategy every MIG device is counted under its profile's resource.
  Labels mixed =
      LabelsOf({"--sim", spec, "--host-root", EmptyHostRoot()}, {"--mig-strategy", "mixed"});
  ExpectValidKubernetesLabels(mixed);
  size_t mig_devices = 0;
  json inventory = Inventory(spec);
  for (const json& gpu : inventory["gpus"]) mig_devices += gpu["mig_devices"].size();
  size_t counted = 0;
  for (const auto& [key, value] : mixed) {
    if (key.starts_with("nvidia.com/mig-") && key.ends_with(".count")) counted += std::stoul(value);
  }
  EXPECT_EQ(counted, mig_devices);
  EXPECT_EQ(mixed.at("nvidia.com/mig.strategy"), "mixed");
}

INSTANTIATE_TEST_SUITE_P(Labels, Capture,
                         ::testing::ValuesIn(testing::CaptureFiles(kFixtures + "/nvidia-smi-xml")),
                         testing::CaptureTestName);

TEST(Labels, TimeSlicingMarksTheProductShared) {
  Labels labels =
      LabelsOf({"--sim", "a10-pcie-4"}, {"--config-file", kConfigs + "/time-slicing.yaml"});
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"), "NVIDIA-A10-SHARED");
  EXPECT_EQ(labels.at("nvidia.com/gpu.replicas"), "4");
  EXPECT_EQ(labels.at("nvidia.com/gpu.sharing-strategy"), "time-slicing");
  EXPECT_EQ(labels.at("nvidia.com/gpu.count"), "4");
  // renameByDefault: the resource is nvidia.com/gpu.shared, the product keeps its name.
  labels =
      LabelsOf({"--sim", "a10-pcie-4"}, {"--config-file", kConfigs + "/time-slicing-renamed.json"});
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"), "NVIDIA-A10");
  EXPECT_EQ(labels.at("nvidia.com/gpu.replicas"), "2");
  // No MPS config: not MPS-capable, as GFD says.
  EXPECT_EQ(labels.at("nvidia.com/mps.capable"), "false");
  // The same file through the environment, as GFD reads it.
  labels =
      LabelsOf({"--sim", "a10-pcie-4"}, {}, {"CONFIG_FILE=" + kConfigs + "/time-slicing.yaml"});
  EXPECT_EQ(labels.at("nvidia.com/gpu.replicas"), "4");
}

TEST(Labels, MpsConfigLabelsTheNodeMpsCapable) {
  std::string dir = ::testing::TempDir() + "/labels-mps";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/mps2") << "sharing:\n  mps:\n    resources:\n"
                                  "    - {name: nvidia.com/gpu, replicas: 2}\n";
  std::ofstream(dir + "/none") << "version: v1\n";
  // A ConfigMap mounted whole: CONFIG_DEFAULT picks the config, as for the device plugin.
  Labels labels =
      LabelsOf({"--sim", "a10-pcie-4"}, {"--config-file", dir}, {"CONFIG_DEFAULT=mps2"});
  EXPECT_EQ(labels.at("nvidia.com/mps.capable"), "true");
  EXPECT_EQ(labels.at("nvidia.com/gpu.sharing-strategy"), "mps");
  EXPECT_EQ(labels.at("nvidia.com/gpu.replicas"), "2");
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"), "NVIDIA-A10-SHARED");
}

// A ConfigMap edit relabels at once, as it restarts the device plugin with the new config: the
// labeller watches the config's directory before it reads it, so the node's sharing labels never
// keep the replicas of a config the plugin no longer runs.
TEST(Labels, AConfigMapEditRelabelsAtOnce) {
  testing::TempDir dir("gpunode-labels-watch");
  std::string configs = dir.path() + "/configs";
  // As the kubelet updates a ConfigMap volume: a new directory, then ..data renamed over.
  auto stage = [&](const std::string& version, const std::string& ts4) {
    fs::create_directories(configs + "/" + version);
    std::ofstream(configs + "/" + version + "/ts4") << ts4;
  };
  auto publish = [&](const std::string& version, const std::string& ts4) {
    stage(version, ts4);
    fs::create_directory_symlink(version, configs + "/..data_tmp");
    fs::rename(configs + "/..data_tmp", configs + "/..data");
    if (!fs::is_symlink(configs + "/ts4")) fs::create_symlink("..data/ts4", configs + "/ts4");
  };
  auto time_slicing = [](int replicas) {
    return "sharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: " +
           std::to_string(replicas) + "}\n";
  };
  fs::create_directories(configs);
  publish("..v1", time_slicing(4));
  std::string out = dir.path() + "/gfd";
  testing::BackgroundProcess labeller(
      {build_paths::kBinary, "--sim", "a10-pcie-4", "--log-level", "debug", "labels",
       "--config-file", configs, "--output", out, "--no-timestamp", "--interval", "1h"},
      testing::BackgroundProcess::Options{.extra_env = {"CONFIG_DEFAULT=ts4"}});
  ASSERT_TRUE(labeller.WaitForLog("watching " + configs + " for config changes", kWait))
      << labeller.Log();
  ASSERT_TRUE(labeller.WaitForLog("labels written to " + out, kWait)) << labeller.Log();
  auto read = [&] {
    std::ifstream in(out);
    return Parse(std::string(std::istreambuf_iterator<char>(in), {}));
  };
  EXPECT_EQ(read().at("nvidia.com/gpu.replicas"), "4");

  // The kubelet's first step wakes the labeller before the new version is in place: the same
  // labels, which it must not report as a relabel.
  stage("..v2", time_slicing(2));
  ASSERT_TRUE(
      labeller.WaitForLog("config changed: the config it selects gives the same labels", kWait))
      << labeller.Log();
  EXPECT_THAT(labeller.Log(), Not(HasSubstr("relabelled with the config it selects")));
  publish("..v2", time_slicing(2));
  ASSERT_TRUE(labeller.WaitForLog("config changed: relabelled with the config it selects", kWait))
      << labeller.Log();
  EXPECT_EQ(read().at("nvidia.com/gpu.replicas"), "2");

  // A version that does not parse keeps the labels of the running config.
  publish("..v3", "sharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replica: 3}\n");
  ASSERT_TRUE(labeller.WaitForLog(
      "config changed but is not applied, keeping the labels of the running config", kWait))
      << labeller.Log();
  EXPECT_EQ(read().at("nvidia.com/gpu.replicas"), "2");
  EXPECT_EQ(labeller.Stop(SIGTERM), 0) << labeller.Log();
}

TEST(Labels, MigStrategiesOnTheA100Node) {
  // Mixed from the config file, MPS on one MIG profile.
  Labels mixed = LabelsOf({"--sim", "a100-mig"}, {"--config-file", kConfigs + "/mps-mixed.yaml"});
  EXPECT_EQ(mixed.at("nvidia.com/mig.strategy"), "mixed");
  EXPECT_EQ(mixed.at("nvidia.com/mig-1g.10gb.count"), "9");
  EXPECT_EQ(mixed.at("nvidia.com/mig-1g.10gb.replicas"), "3");
  EXPECT_EQ(mixed.at("nvidia.com/mig-1g.10gb.sharing-strategy"), "mps");
  // MPS does not run on MIG devices: GFD's labeller fails here, gpunode says "not capable".
  EXPECT_EQ(mixed.at("nvidia.com/mps.capable"), "false");
  EXPECT_EQ(mixed.at("nvidia.com/mig-1g.10gb.product"), "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb-SHARED");
  EXPECT_EQ(mixed.at("nvidia.com/mig-1g.10gb.memory"), "9728");
  EXPECT_EQ(mixed.at("nvidia.com/mig-1g.10gb.slices.gi"), "1");
  EXPECT_EQ(mixed.at("nvidia.com/mig-3g.40gb.replicas"), "1");
  EXPECT_EQ(mixed.at("nvidia.com/mig-3g.40gb.sharing-strategy"), "none");
  EXPECT_EQ(mixed.at("nvidia.com/mig-7g.80gb.multiprocessors"), "98");
  // Single: several profiles and MIG-disabled GPUs make an invalid layout, as GFD reports it.
  // The flag beats the environment, which beats the file.
  Labels single =
      LabelsOf({"--sim", "a100-mig"},
               {"--config-file", kConfigs + "/mps-mixed.yaml", "--mig-strategy", "single"},
               {"MIG_STRATEGY=mixed"});
  EXPECT_EQ(single.at("nvidia.com/mig.strategy"), "single");
  EXPECT_EQ(single.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-80GB-MIG-INVALID");
  EXPECT_EQ(single.at("nvidia.com/gpu.count"), "0");
  EXPECT_EQ(single.at("nvidia.com/gpu.memory"), "0");
  Labels from_env = LabelsOf({"--sim", "a100-mig"}, {}, {"GFD_MIG_STRATEGY=mixed"});
  EXPECT_EQ(from_env.at("nvidia.com/mig.strategy"), "mixed");
  // Single on a node without MIG is the same as none (plus the strategy label).
  Labels plain = LabelsOf({"--sim", "h200-1"}, {"--mig-strategy", "single"});
  EXPECT_EQ(plain.at("nvidia.com/gpu.product"), "NVIDIA-H200");
  EXPECT_EQ(plain.at("nvidia.com/mig.strategy"), "single");
}

// A host tree whose PCI bus has an NVIDIA 3D controller (an A10) at each address.
void AddNvidiaControllers(testing::TempDir& host, const std::vector<std::string>& addresses) {
  for (const std::string& address : addresses) {
    const std::string dir = "sys/bus/pci/devices/" + address;
    fs::create_directories(host.path() + "/" + dir);
    host.Write(dir + "/vendor", "0x10de\n");
    host.Write(dir + "/device", "0x2236\n");
    host.Write(dir + "/class", "0x030200\n");
  }
}

// gpu.count is the physical count: a GPU that fell off the bus still counts (NVIDIA's
// nvidia.com/gpu.count, GFD's meaning, does not), and so does a card on the PCI bus the driver
// did not take, so that a node missing a card never reads n of n. gpu.missing names the cards
// NVML does not see by PCI address, so the cluster commands can name them too.
TEST(Labels, TheStableCountIsPhysicalAndTheMissingGpusAreNamed) {
  const std::string lost_gpu = kFixtures + "/profiles/one-gpu-lost.yaml";
  auto labels = [&](const std::string& host_root, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--sim",   lost_gpu, "--host-root",
                                     host_root, "labels", "--oneshot",
                                     "-o",      "-",      "--stable-labels"};
    args.insert(args.end(), extra.begin(), extra.end());
    testing::ProcessResult r = Gpunode(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("GPU 0 left out of the labels"));
    Labels parsed = Parse(r.out);
    ExpectValidKubernetesLabels(parsed);
    return parsed;
  };
  // No PCI bus to read (a simulated node without a host tree): the count is the driver's, and
  // the lost GPU's address is unknown.
  Labels lost = labels(EmptyHostRoot());
  EXPECT_EQ(lost.at("gpu.count"), "2");
  EXPECT_EQ(lost.at("gpu.missing"), "1-unknown");
  EXPECT_EQ(lost.at("nvidia.com/gpu.count"), "1");
  EXPECT_EQ(lost.at("accelerator"), "nvidia-a10");

  // The bus has both GPUs of the profile: the lost one is the one NVML no longer answers for.
  testing::TempDir both("gpunode-labels-pci-both");
  AddNvidiaControllers(both, {"0000:17:00.0", "0000:65:00.0"});
  Labels named = labels(both.path());
  EXPECT_EQ(named.at("gpu.count"), "2");
  EXPECT_EQ(named.at("gpu.missing"), "17-00.0");
  EXPECT_EQ(
      labels(both.path(), {"--stable-label-prefix", "example.com/"}).at("example.com/gpu.missing"),
      "17-00.0");

  // And a third card the driver did not take at all.
  testing::TempDir three("gpunode-labels-pci-three");
  AddNvidiaControllers(three, {"0000:17:00.0", "0000:65:00.0", "0000:b3:00.0"});
  Labels more = labels(three.path());
  EXPECT_EQ(more.at("gpu.count"), "3");
  EXPECT_EQ(more.at("gpu.missing"), "17-00.0_b3-00.0");
}

// A node with every GPU it has gets no gpu.missing: its labels do not change.
TEST(Labels, AHealthyNodeHasNoMissingLabel) {
  testing::TempDir host("gpunode-labels-pci-healthy");
  AddNvidiaControllers(host, {"0000:17:00.0", "0000:18:00.0", "0000:b1:00.0", "0000:b2:00.0"});
  Labels labels =
      LabelsOf({"--sim", "a10-pcie-4", "--host-root", host.path()}, {"--stable-labels"});
  EXPECT_EQ(labels.at("gpu.count"), "4");
  EXPECT_FALSE(labels.contains("gpu.missing"));
  EXPECT_FALSE(
      LabelsOf({"--sim", "a10-pcie-4", "--host-root", EmptyHostRoot()}, {"--stable-labels"})
          .contains("gpu.missing"));
}

TEST(Labels, MachineTypeTimestampAndStableScheme) {
  Labels labels = LabelsOf({"--sim", "a10-pcie-4", "--host-root", kConfigs + "/host"},
                           {"--no-timestamp", "--stable-labels"});
  EXPECT_EQ(labels.at("nvidia.com/gpu.machine"), "PowerEdge-XE9680");
  EXPECT_FALSE(labels.contains("nvidia.com/gfd.timestamp"));
  EXPECT_EQ(labels.at("accelerator"), "nvidia-a10");
  EXPECT_EQ(labels.at("gpu.count"), "4");
  EXPECT_EQ(labels.at("gpu.memory"), "24g");
  labels =
      LabelsOf({"--sim", "dgx-h100"}, {"--stable-labels", "--stable-label-prefix", "example.com/"});
  EXPECT_EQ(labels.at("example.com/accelerator"), "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(labels.at("example.com/gpu.memory"), "80g");
  EXPECT_EQ(labels.at("example.com/gpu.count"), "8");
  // Off unless asked for.
  EXPECT_FALSE(LabelsOf({"--sim", "h200-1"}).contains("accelerator"));
}

TEST(Labels, StdoutWithDash) {
  testing::ProcessResult r = Gpunode({"--sim", "h200-1", "labels", "--oneshot", "-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Parse(r.out).at("nvidia.com/gpu.product"), "NVIDIA-H200");
}

// GFD's booleans are Go's strconv.ParseBool: "t" and "T" count as NVIDIA's GFD counts them.
TEST(Labels, GfdEnvironmentBooleansAsGoParsesThem) {
  testing::ProcessResult r =
      Gpunode({"--sim", "h200-1", "labels", "-o", "-"}, {"GFD_ONESHOT=t", "GFD_NO_TIMESTAMP=T"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Labels labels = Parse(r.out);
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"), "NVIDIA-H200");
  EXPECT_FALSE(labels.contains("nvidia.com/gfd.timestamp"));
  // Empty is unset, as for GFD: the timestamp stays.
  r = Gpunode({"--sim", "h200-1", "labels", "-o", "-"}, {"GFD_ONESHOT=1", "GFD_NO_TIMESTAMP="});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Parse(r.out).contains("nvidia.com/gfd.timestamp"));
}

TEST(Labels, SaysWhatItRunsWithAtInfo) {
  testing::ProcessResult r = Gpunode(
      {"--sim", "h200-1", "--log-level", "info", "labels", "--oneshot", "-o", "-",
       "--stable-labels", "--stable-label-prefix", "example.com/", "--mig-strategy", "single"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("info labels: writing to stdout once; config none; MIG strategy "
                               "single; stable labels on under example.com/; timestamp on\n"));
}

TEST(Labels, BadInputIsOneLineExit2AndNothingWritten) {
  testing::TempDir dir("gpunode-labels-bad");
  std::string out = dir.path() + "/gfd";
  testing::WriteText(out, "previous=labels\n");
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> env;
    std::string names;
  };
  for (const Case& c : std::vector<Case>{
           {{"--config-file", kConfigs + "/bad-replicas.yaml"}, {}, "bad-replicas.yaml:6"},
           {{"--config-file", kConfigs + "/bad-typo.yaml"}, {}, "replica: unknown key"},
           {{"--config-file", dir.path() + "/missing.yaml"}, {}, "--config-file"},
           {{}, {"CONFIG_FILE=" + kConfigs + "/bad-replicas.yaml"}, "CONFIG_FILE: "},
           {{"--mig-strategy", "some"}, {}, "--mig-strategy"},
           {{}, {"MIG_STRATEGY=all"}, "MIG_STRATEGY"},
           {{},
            {"GFD_NO_TIMESTAMP=yes"},
            "environment variable GFD_NO_TIMESTAMP: \"yes\" is not a boolean"},
           {{"--interval", "often"}, {}, "--interval"},
           {{"--interval", "10s", "--oneshot"}, {}, "--oneshot and --interval"},
           {{"--stable-labels", "--stable-label-prefix", "Example.com/"},
            {},
            "--stable-label-prefix \"Example.com/\" has 'E'"},
           {{"--stable-labels", "--stable-label-prefix", "example.com"},
            {},
            "--stable-label-prefix \"example.com\" does not end with /"},
       }) {
    std::vector<std::string> args = {"--sim", "a10-pcie-4", "labels", "--output", out};
    if (std::find(c.args.begin(), c.args.end(), "--interval") == c.args.end())
      args.push_back("--oneshot");
    args.insert(args.end(), c.args.begin(), c.args.end());
    testing::ProcessResult r = Gpunode(args, c.env);
    EXPECT_EQ(r.exit_code, 2) << c.names << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.names));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(testing::ReadText(out), "previous=labels\n") << c.names;
  }
  // --write node: its own flags, before the API server is asked anything.
  for (const Case& c : std::vector<Case>{
           {{"--write", "api"},
            {},
            "--write api: give file (NFD's features.d, the default) or node"},
           {{"--write", "node"}, {}, "--write node: no node; set --node-name (or NODE_NAME)"},
           {{"--write", "node", "--node-name", "gpu-a", "-o", out},
            {},
            "-o/--output names the features file of --write file"},
           {{"--write", "node", "--stable-labels", "--stable-label-prefix", "example.com"},
            {"NODE_NAME=gpu-a"},
            "--stable-label-prefix \"example.com\" does not end with /"},
       }) {
    std::vector<std::string> args = {"--sim", "a10-pcie-4", "labels", "--oneshot"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    testing::ProcessResult r = Gpunode(args, c.env);
    EXPECT_EQ(r.exit_code, 2) << c.names << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.names));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  testing::ProcessResult r = Gpunode(
      {"--sim", "a10-pcie-4", "labels", "--oneshot", "--output", dir.path() + "/no/such/gfd"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--output " + dir.path() + "/no/such/gfd"));
  EXPECT_FALSE(fs::exists(dir.path() + "/no"));
  // A device or a pipe is refused and left as it is: the file's rename would replace it (once,
  // /dev/null of the whole machine).
  const std::string pipe = dir.path() + "/pipe";
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  for (const std::string& special : {pipe, std::string("/dev/null")}) {
    r = Gpunode({"--sim", "a10-pcie-4", "labels", "--oneshot", "--output", special});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("--output " + special + ": not a regular file"));
  }
  EXPECT_TRUE(fs::is_fifo(pipe));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

// -o is GFD's features file, kept for compatibility; a format name given to it is a mistake to
// refuse, not a file to create.
TEST(Labels, AFormatNameIsNotTakenForTheFeaturesFile) {
  for (const std::string format : {"json", "yaml", "table"}) {
    testing::ProcessResult r = Gpunode({"--sim", "h200-1", "labels", "--oneshot", "-o", format});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err,
                HasSubstr("-o/--output " + format + ": labels writes GFD's key=value lines"));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(format)) << format;
  }
}

TEST(Labels, IntervalModeRelabelsAndRemovesItsFileOnSigterm) {
  testing::TempDir dir("gpunode-labels-daemon");
  std::string out = dir.path() + "/gfd";
  testing::BackgroundProcess labeller(
      {build_paths::kBinary, "--sim", "a10-pcie-4", "labels", "--interval", "1s", "--output", out});
  std::string first;
  ASSERT_TRUE(testing::Eventually([&] {
    first = testing::ReadText(out);
    return first.find("nvidia.com/gfd.timestamp=") != std::string::npos;
  })) << labeller.Stderr();
  // Relabels: the timestamp moves on.
  ASSERT_TRUE(testing::Eventually(
      [&] {
        std::string now = testing::ReadText(out);
        return !now.empty() && Parse(now).at("nvidia.com/gfd.timestamp") !=
                                   Parse(first).at("nvidia.com/gfd.timestamp");
      },
      std::chrono::seconds(5)));
  EXPECT_EQ(labeller.Stop(SIGTERM), 0) << labeller.Stderr();
  EXPECT_FALSE(fs::exists(out)) << "the labels of a stopped labeller must go";
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace
}  // namespace gpunode
