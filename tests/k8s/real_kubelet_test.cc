// The device plugin against the real kubelet (scripts/local-cluster.sh node: the kubelet of the
// pinned release with Debian's containerd and runc, registered as a Node of the local control
// plane): it registers with the kubelet's own device manager, its resources appear on the real
// Node, the kubelet's admission path calls Allocate for a pod that the real scheduler placed and
// containerd runs, and a GPU's XID reaches the Node's allocatable and the pod's status. The
// doctor, the exporter and `cluster audit` then read what the real kubelet wrote. One cluster and
// one node serve the whole binary (ctest runs it as one test, label real-cluster); every wait is
// for a state of the API or a line of a log, with a deadline.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "helm_runner.h"
#include "local_cluster.h"
#include "log_time.h"
#include "nlohmann/json.hpp"
#include "nvidia_packages.h"
#include "plugin_node.h"
#include "process.h"
#include "temp_dir.h"

namespace gpunode {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::system_clock;

const std::string kFixtures = std::string(build_paths::kSourceDir) + "/tests/fixtures";

testing::LocalCluster* cluster = nullptr;
bool node_started = false;

// The host's iptables chains named KUBE-*, as "tool table chain": the kubelet makes some in the
// host's network namespace, and the node's stop must remove the ones it made.
std::set<std::string> HostKubeChains() {
  std::set<std::string> chains;
  for (std::string tool : {"iptables-save", "ip6tables-save"}) {
    testing::ProcessResult r = testing::RunProcess({"/bin/sh", "-c", tool + " 2>/dev/null"});
    std::string table;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with("*")) table = line.substr(1);
      if (line.starts_with(":KUBE-")) {
        chains.insert(tool + " " + table + " " + line.substr(1, line.find(' ') - 1));
      }
    }
  }
  return chains;
}

class NodeEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    chains_before_ = HostKubeChains();
    cluster = new testing::LocalCluster();
    node_started =
        cluster->StartNode(std::filesystem::path(build_paths::kBinary).parent_path().string());
  }
  void TearDown() override {
    delete cluster;
    cluster = nullptr;
    if (!node_started) return;
    std::vector<std::string> left;
    for (const std::string& chain : HostKubeChains()) {
      if (!chains_before_.contains(chain)) left.push_back(chain);
    }
    EXPECT_TRUE(left.empty()) << "the node's stop left the kubelet's chains in the host: "
                              << ::testing::PrintToString(left);
  }

 private:
  std::set<std::string> chains_before_;
};

const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new NodeEnvironment);

// Every test starts with this: a skip names the missing components or privilege, a failed start
// shows the component's log.
#define REQUIRE_NODE()                                                             \
  do {                                                                             \
    if (!cluster->missing().empty()) GTEST_SKIP() << cluster->missing();           \
    if (!cluster->node_missing().empty()) GTEST_SKIP() << cluster->node_missing(); \
    ASSERT_TRUE(node_started && cluster->error().empty()) << cluster->error();     \
  } while (false)

testing::ProcessResult Gpunode(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {build_paths::kBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProcess(argv);
}

json Get(const std::vector<std::string>& what) {
  std::vector<std::string> args = {"get"};
  args.insert(args.end(), what.begin(), what.end());
  args.insert(args.end(), {"-o", "json"});
  testing::ProcessResult r = cluster->Kubectl(args);
  return r.exit_code == 0 ? json::parse(r.out) : json();
}

json Node() { return Get({"node", cluster->node_name()}); }

std::string Quantity(const json& node, const std::string& field, const std::string& resource) {
  const json& status = node.value("status", json::object());
  return status.value(field, json::object()).value(resource, "");
}

// Waits until `ready` holds for what `read` returns; the last value read either way.
json AwaitState(const std::function<json()>& read, const std::function<bool(const json&)>& ready,
                seconds limit) {
  json value;
  testing::AwaitCluster([&] { return ready(value = read()); }, limit);
  return value;
}

// Waits until the Node's allocatable holds each resource with its count; true when it did.
::testing::AssertionResult AwaitAllocatable(const std::map<std::string, std::string>& want,
                                            seconds limit = seconds(30)) {
  auto all_there = [&](const json& node) {
    for (const auto& [resource, count] : want) {
      if (Quantity(node, "allocatable", resource) != count) return false;
    }
    return true;
  };
  json node = AwaitState(Node, all_there, limit);
  if (all_there(node)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "the Node's allocatable is " << node["status"]["allocatable"].dump();
}

// deploy/ROLE/rbac.yaml applied, and a kubeconfig with the token of its ServiceAccount in
// gpunode-system: the role's grants, and no more.
std::string KubeconfigWithTheGrantsOf(const std::string& role, const std::string& account) {
  cluster->Kubectl({"create", "namespace", "gpunode-system"});
  testing::ProcessResult r = cluster->Kubectl(
      {"apply", "-f", std::string(build_paths::kSourceDir) + "/deploy/" + role + "/rbac.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? cluster->ServiceAccountKubeconfig("gpunode-system", account) : "";
}

// `gpunode device-plugin` on a simulated node, registering with the real kubelet.
class Plugin {
 public:
  Plugin(const std::string& sim, std::vector<std::string> flags,
         std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {build_paths::kBinary,
                                     "--log-level",
                                     "info",
                                     "--sim",
                                     sim,
                                     "device-plugin",
                                     "--kubelet-dir",
                                     cluster->device_plugin_dir()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    process_ = std::make_unique<testing::BackgroundProcess>(argv, env);
  }
  ~Plugin() { process_->Stop(SIGTERM); }
  std::string Log() const { return process_->Log(); }
  bool WaitForLog(const std::string& text) const {
    return process_->WaitForLog(text, milliseconds(20000));
  }

 private:
  std::unique_ptr<testing::BackgroundProcess> process_;
};

// The plugin's flags that hand the simulated driver's device nodes to the pods
// (LocalCluster::driver_dir), as the NVIDIA runtime would create them.
std::vector<std::string> WithDeviceNodes() {
  return {"--dev-root", cluster->driver_dir(), "--pass-device-specs"};
}

// deploy/runtime/runtimeclass.yaml: pods that name RuntimeClass nvidia run with the node's
// `nvidia` runtime handler.
void ApplyTheNvidiaRuntimeClass() {
  testing::ProcessResult r = cluster->Kubectl(
      {"apply", "-f", std::string(build_paths::kSourceDir) + "/deploy/runtime/runtimeclass.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// The device plugin tests' profile (dgx-h100 with a process on GPU 7) with `timeline` in place of
// its own: every version has the same name, hence the same GPU UUIDs, so a plugin started on one
// version sees the GPUs the kubelet allocated from another.
std::string WriteProfile(const testing::TempDir& dir, const std::string& timeline) {
  std::ifstream in(kFixtures + "/plugin/dgx-h100-xids.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string profile = text.str();
  profile = profile.substr(0, profile.find("\n# XID 13 is the application's fault"));
  std::string path = dir.path() + "/dgx-h100-xids.yaml";
  std::ofstream(path) << profile << "\n" << timeline;
  return path;
}

std::vector<std::string> Uuids(const std::string& sim) {
  testing::ProcessResult r = Gpunode({"--sim", sim, "inventory", "-o", "json"});
  std::vector<std::string> uuids;
  if (r.exit_code != 0) return uuids;
  json inventory = json::parse(r.out);
  for (const json& gpu : inventory["gpus"]) uuids.push_back(gpu["uuid"]);
  return uuids;
}

// The spec of a pod that runs the local image with these resource limits.
json LocalPodSpec(const json& limits) {
  return {{"terminationGracePeriodSeconds", 1},
          {"containers",
           {{{"name", "main"},
             {"image", testing::LocalCluster::kLocalImage},
             {"imagePullPolicy", "Never"},
             {"resources", {{"limits", limits}}}}}}};
}

json LocalPod(const std::string& name, const json& limits) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", LocalPodSpec(limits)}};
}

// A pod that asks for `gpus` whole GPUs and runs the local image.
void CreateGpuPod(const std::string& name, int gpus) {
  json pod = LocalPod(name, {{"nvidia.com/gpu", std::to_string(gpus)}});
  testing::ProcessResult r = cluster->Kubectl({"create", "-f", "-"}, pod.dump());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = cluster->Kubectl({"wait", "--for=condition=Ready", "pod/" + name, "--timeout=60s"});
  ASSERT_EQ(r.exit_code, 0) << r.err << Get({"pod", name}).value("status", json()).dump();
}

void DeletePod(const std::string& name) {
  cluster->Kubectl({"delete", "pod", name, "--wait=true", "--timeout=60s"});
}

// The devices the kubelet's checkpoint (device-plugins/kubelet_internal_checkpoint, the file the
// doctor reads) holds for a pod's container.
std::vector<std::string> CheckpointedDevices(const std::string& pod_uid) {
  std::ifstream in(cluster->device_plugin_dir() + "/kubelet_internal_checkpoint");
  json checkpoint = json::parse(in, nullptr, false);
  std::vector<std::string> devices;
  if (checkpoint.is_discarded()) return devices;
  for (const json& entry : checkpoint["Data"]["PodDeviceEntries"]) {
    if (entry["PodUID"] != pod_uid || entry["ResourceName"] != "nvidia.com/gpu") continue;
    for (const auto& [numa, ids] : entry["DeviceIDs"].items()) {
      for (const json& id : ids) devices.push_back(id);
    }
  }
  return devices;
}

// NVIDIA_VISIBLE_DEVICES in the OCI spec containerd made for the pod's container: what the
// kubelet passed on from Allocate.
std::string VisibleDevicesOfContainer(const std::string& pod_name) {
  std::vector<std::string> ctr = {"/usr/bin/ctr", "-a",     cluster->containerd_socket(),
                                  "-n",           "k8s.io", "containers"};
  std::vector<std::string> list = ctr;
  list.insert(list.end(), {"ls", "-q"});
  std::istringstream ids(testing::RunProcess(list).out);
  for (std::string id; std::getline(ids, id);) {
    std::vector<std::string> info = ctr;
    info.insert(info.end(), {"info", id});
    json container = json::parse(testing::RunProcess(info).out, nullptr, false);
    if (container.is_discarded()) continue;
    const json& labels = container["Labels"];
    if (labels.value("io.kubernetes.pod.name", "") != pod_name ||
        labels.value("io.kubernetes.container.name", "") != "main") {
      continue;
    }
    for (const json& env : container["Spec"]["process"].value("env", json::array())) {
      std::string line = env;
      if (line.rfind("NVIDIA_VISIBLE_DEVICES=", 0) == 0) return line.substr(line.find('=') + 1);
    }
  }
  return "";
}

std::set<std::string> SplitComma(const std::string& text) {
  std::set<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.insert(item);
  return out;
}

// What a host with these GPUs has beside NVML: an NVIDIA 3D controller on the PCI bus and a
// device node for each, the control and UVM nodes.
void AddGpuDevices(const std::string& root, const json& gpus) {
  namespace fs = std::filesystem;
  fs::create_directories(root + "/dev");
  for (const json& gpu : gpus) {
    // NVML's bus id has an 8-digit domain ("00000000:1B:00.0"); sysfs has 4, in lower case.
    std::string bus_id = gpu["pci_bus_id"];
    std::string address = bus_id.substr(bus_id.size() - 12);
    for (char& c : address) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    fs::path dir = fs::path(root) / "sys/bus/pci/devices" / address;
    fs::create_directories(dir);
    std::ofstream(dir / "vendor") << "0x10de\n";
    std::ofstream(dir / "device") << "0x2330\n";
    std::ofstream(dir / "class") << "0x030200\n";
    std::ofstream(root + "/dev/nvidia" + std::to_string(gpu["index"].get<int>()));
  }
  for (const char* node : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}) {
    std::ofstream(root + "/dev/" + node);
  }
  for (const fs::directory_entry& node : fs::directory_iterator(root + "/dev")) {
    fs::permissions(node.path(), fs::perms(0666));
  }
}

TEST(DevicePluginOnTheRealKubelet, WholeSharedAndMigResourcesReachTheNode) {
  REQUIRE_NODE();
  {
    Plugin plugin("dgx-h100", {});
    EXPECT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "8"}})) << plugin.Log();
    EXPECT_EQ(Quantity(Node(), "capacity", "nvidia.com/gpu"), "8");
  }
  {
    Plugin plugin("dgx-h100", {"--config-file", kFixtures + "/plugin/time-slicing-4.yaml"});
    EXPECT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "32"}})) << plugin.Log();
  }
  // Mixed MIG: one resource per MIG profile, and nvidia.com/gpu for the GPUs without MIG, counted
  // from the inventory of the same simulated node.
  testing::ProcessResult inventory = Gpunode({"--sim", "a100-mig", "inventory", "-o", "json"});
  ASSERT_EQ(inventory.exit_code, 0) << inventory.err;
  std::map<std::string, int> counts;
  json gpus = json::parse(inventory.out)["gpus"];
  for (const json& gpu : gpus) {
    if (!gpu["mig_enabled"]) ++counts["nvidia.com/gpu"];
    for (const json& mig : gpu["mig_devices"])
      ++counts["nvidia.com/mig-" + mig["profile"].get<std::string>()];
  }
  ASSERT_GE(counts.size(), 3u);
  std::map<std::string, std::string> want;
  for (const auto& [resource, count] : counts) want[resource] = std::to_string(count);
  Plugin plugin("a100-mig", {"--mig-strategy", "mixed"});
  EXPECT_TRUE(AwaitAllocatable(want)) << plugin.Log();
}

TEST(DevicePluginOnTheRealKubelet, TheKubeletAllocatesTwoGpusToAPodAndTheToolsReadItsRecords) {
  REQUIRE_NODE();
  testing::TempDir dir("gpunode-kubelet-test");
  std::string profile = WriteProfile(dir, "");
  std::vector<std::string> uuids = Uuids(profile);
  ASSERT_EQ(uuids.size(), 8u);
  Plugin plugin(profile, {});
  ASSERT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "8"}})) << plugin.Log();

  CreateGpuPod("train", 2);
  json pod = Get({"pod", "train"});
  EXPECT_EQ(pod["spec"]["nodeName"], cluster->node_name());  // the real scheduler placed it
  std::vector<std::string> devices = CheckpointedDevices(pod["metadata"]["uid"]);
  ASSERT_EQ(devices.size(), 2u) << "the kubelet's checkpoint has no entry for the pod";
  for (const std::string& device : devices) {
    EXPECT_THAT(uuids, ::testing::Contains(device));
  }
  // Allocate's answer reached the container: the kubelet handed containerd the plugin's variable.
  EXPECT_EQ(SplitComma(VisibleDevicesOfContainer("train")),
            std::set<std::string>(devices.begin(), devices.end()));
  // The plugin chose the pair (GetPreferredAllocation): both GPUs on one NUMA node.
  testing::ProcessResult r = Gpunode({"--sim", profile, "inventory", "-o", "json"});
  std::map<std::string, int> numa;
  json gpus = json::parse(r.out)["gpus"];
  for (const json& gpu : gpus) numa[gpu["uuid"]] = gpu["numa_node"];
  EXPECT_EQ(numa[devices[0]], numa[devices[1]]);

  // The doctor reads the real kubelet's checkpoint, copied into the doctor tests' healthy host
  // tree: the check depends on the GPUs' PCI devices, device nodes and kernel module, which this
  // machine does not have.
  testing::TempDir host("gpunode-kubelet-test-host");
  std::filesystem::copy(kFixtures + "/doctor/healthy", host.path(),
                        std::filesystem::copy_options::recursive);
  AddGpuDevices(host.path(), gpus);
  std::filesystem::copy_file(
      cluster->device_plugin_dir() + "/kubelet_internal_checkpoint",
      host.path() + "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint",
      std::filesystem::copy_options::overwrite_existing);
  r = Gpunode({"--sim", profile, "--host-root", host.path(), "doctor", "-o", "json"});
  json report = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << r.out << r.err;
  bool checked = false;
  for (const json& finding : report["findings"]) {
    if (finding["id"] != "kubelet.registered") continue;
    checked = true;
    EXPECT_EQ(finding["status"], "ok") << r.out;
    EXPECT_THAT(finding["summary"].get<std::string>(), HasSubstr("registered with 8 device(s)"));
  }
  EXPECT_TRUE(checked) << r.out;

  // The exporter attributes the two GPUs to the pod through the real PodResources API.
  r = Gpunode({"--sim", profile, "exporter", "--once", "--pod-resources-socket",
               cluster->pod_resources_socket()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> attributed;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("DCGM_FI_DEV_GPU_TEMP{", 0) != 0 ||
        line.find("pod=\"train\"") == std::string::npos) {
      continue;
    }
    EXPECT_THAT(line, HasSubstr("namespace=\"default\""));
    EXPECT_THAT(line, HasSubstr("container=\"main\""));
    size_t at = line.find("UUID=\"") + 6;
    attributed.insert(line.substr(at, line.find('"', at) - at));
  }
  EXPECT_EQ(attributed, std::set<std::string>(devices.begin(), devices.end())) << r.out;

  // cluster audit counts the pod's request against the real Node's allocatable.
  r = Gpunode({"cluster", "audit", "--kubeconfig", cluster->admin_kubeconfig(), "-o", "json"});
  json audit = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(audit.is_discarded()) << r.out << r.err;
  bool listed = false;
  for (const json& node : audit["nodes"]) {
    if (node["name"] != cluster->node_name()) continue;
    listed = true;
    EXPECT_EQ(node["allocatable"], 8) << node.dump();
    EXPECT_EQ(node["requested"], 2) << node.dump();
  }
  EXPECT_TRUE(listed) << r.out;
  DeletePod("train");
}

TEST(DevicePluginOnTheRealKubelet, ARestartedKubeletHasThePluginBackWithinASecond) {
  REQUIRE_NODE();
  Plugin plugin("dgx-h100", {});
  ASSERT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "8"}})) << plugin.Log();
  ASSERT_TRUE(cluster->RestartKubelet()) << cluster->error();
  // The kubelet makes its registration socket anew when it starts, which can be after its healthz
  // answers; the plugin registers again.
  auto registered_twice = [&] {
    std::string log = plugin.Log();
    return log.find("Registered device plugin") != log.rfind("Registered device plugin");
  };
  auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (!registered_twice() && std::chrono::steady_clock::now() < deadline) {
    plugin.WaitForLog("kubelet opened ListAndWatch");
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(registered_twice()) << plugin.Log();
  // Only now is the socket surely the new kubelet's: the old one stays on disk until the new
  // kubelet replaces it, so a stat before the second registration could read the old one's time.
  struct stat socket {};
  ASSERT_EQ(::stat((cluster->device_plugin_dir() + "/kubelet.sock").c_str(), &socket), 0);
  Clock::time_point made = Clock::time_point(std::chrono::duration_cast<Clock::duration>(
      seconds(socket.st_ctim.tv_sec) + std::chrono::nanoseconds(socket.st_ctim.tv_nsec)));
  std::optional<Clock::time_point> again =
      testing::LastLogTime(plugin.Log(), "Registered device plugin");
  ASSERT_TRUE(again.has_value());
  auto latency = std::chrono::duration_cast<milliseconds>(*again - made);
  RecordProperty("kubelet_socket_to_registered_ms", static_cast<int>(latency.count()));
  EXPECT_LE(latency.count(), 1000) << "the plugin registered again late";
  EXPECT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "8"}})) << plugin.Log();
}

TEST(DevicePluginOnTheRealKubelet, AnXidTakesTheGpuOffTheNodeAndThePodStatusShowsIt) {
  REQUIRE_NODE();
  testing::TempDir dir("gpunode-kubelet-test");
  std::string profile = WriteProfile(dir, "");
  std::vector<std::string> devices;
  {
    Plugin plugin(profile, {});
    ASSERT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "8"}})) << plugin.Log();
    CreateGpuPod("inference", 2);
    devices = CheckpointedDevices(Get({"pod", "inference"})["metadata"]["uid"]);
    ASSERT_EQ(devices.size(), 2u);
  }
  // The same node again, now with XID 79 on the first of the pod's GPUs a second after start.
  std::vector<std::string> uuids = Uuids(profile);
  size_t index = std::find(uuids.begin(), uuids.end(), devices[0]) - uuids.begin();
  ASSERT_LT(index, uuids.size());
  profile = WriteProfile(
      dir, "timeline:\n  - {at: 1s, gpu: " + std::to_string(index) + ", event: xid, xid: 79}\n");
  Plugin plugin(profile, {"--health-recovery-period", "0"});
  ASSERT_TRUE(plugin.WaitForLog("XID 79")) << plugin.Log();
  EXPECT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "7"}})) << plugin.Log();
  EXPECT_EQ(Quantity(Node(), "capacity", "nvidia.com/gpu"), "8");

  // ResourceHealthStatus: the kubelet reports the health of the pod's devices in its status.
  auto health_of = [&](const json& pod) {
    std::map<std::string, std::string> health;
    for (const json& status : pod["status"].value("containerStatuses", json::array())) {
      for (const json& resource : status.value("allocatedResourcesStatus", json::array())) {
        if (resource["name"] != "nvidia.com/gpu") continue;
        for (const json& device : resource.value("resources", json::array())) {
          health[device["resourceID"]] = device.value("health", "");
        }
      }
    }
    return health;
  };
  json pod = AwaitState(
      [] {
        return Get({"pod", "inference"});
      },
      [&](const json& p) { return health_of(p)[devices[0]] == "Unhealthy"; }, seconds(30));
  std::map<std::string, std::string> health = health_of(pod);
  EXPECT_EQ(health[devices[0]], "Unhealthy") << pod["status"].dump();
  EXPECT_EQ(health[devices[1]], "Healthy") << pod["status"].dump();

  // audit names the node short of a GPU.
  testing::ProcessResult r =
      Gpunode({"cluster", "audit", "--kubeconfig", cluster->admin_kubeconfig(), "-o", "json"});
  json audit = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(audit.is_discarded()) << r.out << r.err;
  bool found = false;
  for (const json& finding : audit["findings"]) {
    found |= finding["id"] == "gpu-unhealthy" &&
             finding["message"].get<std::string>().find("(capacity 8, allocatable 7)") !=
                 std::string::npos;
  }
  EXPECT_TRUE(found) << r.out;
  DeletePod("inference");
}

// The line of `text` that starts with `prefix`, without it; empty when there is none.
std::string LineAfter(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  }
  return "";
}

// NVIDIA's device plugin (k8s-device-plugin v0.19.1, scripts/build-nvidia-tools.sh) and gpunode's,
// one after the other on the same simulated node (tests/side_by_side/plugin_node.h: Debian's
// driver root with the simulator as its NVML, in a mount namespace whose
// /var/lib/kubelet/device-plugins leads to this kubelet's), registered with the real kubelet:
// the Node must get the same resources and counts from either, and a pod asking for two devices
// of each resource the same number of distinct devices of this node, handed to its container
// (NVIDIA_VISIBLE_DEVICES) as the kubelet recorded them. Which two may differ: NVIDIA's plugin
// breaks ties in Go map order (docs/DEVICE_PLUGIN.md, "Beside NVIDIA's device plugin").
TEST(DevicePluginsSideBySideOnTheRealKubelet, TheNodeAndItsPodsGetTheSameFromEither) {
  REQUIRE_NODE();
  testing::PluginNode node(build_paths::kSourceDir, build_paths::kBinary);
  if (!node.skip().empty()) GTEST_SKIP() << node.skip();
  ASSERT_EQ(node.error(), "");
  // Each case with the resources its node must have, counted from gpunode's inventory of the
  // same simulated GPUs: whole GPUs, four replicas of each, or (single) one per MIG device.
  struct Case {
    std::string profile;  // built-in, or a path under the source tree
    std::string mig_strategy;
    std::string config_file;
    int per_device;  // devices advertised per GPU (replicas), or 0: one per MIG device
  };
  for (const Case& c :
       std::vector<Case>{{"dgx-h100", "none", "", 1},
                         {"dgx-h100", "none", kFixtures + "/plugin/time-slicing-4.yaml", 4},
                         {"tests/fixtures/plugin/a100-mig-single.yaml", "single", "", 0}}) {
    SCOPED_TRACE(c.profile + " " + c.mig_strategy + " " + c.config_file);
    const std::string sim = c.profile.find('/') == std::string::npos
                                ? c.profile
                                : std::string(build_paths::kSourceDir) + "/" + c.profile;
    testing::ProcessResult inventory = Gpunode({"--sim", sim, "inventory", "-o", "json"});
    ASSERT_EQ(inventory.exit_code, 0) << inventory.err;
    int devices = 0;
    const json gpus = json::parse(inventory.out)["gpus"];
    for (const json& gpu : gpus) {
      devices += c.per_device > 0 ? c.per_device : static_cast<int>(gpu["mig_devices"].size());
    }
    const std::map<std::string, std::string> want = {{"nvidia.com/gpu", std::to_string(devices)}};

    std::set<std::string> handed[2];
    for (bool nvidias : {true, false}) {
      SCOPED_TRACE(nvidias ? "NVIDIA's plugin" : "gpunode's plugin");
      testing::PluginRun run{.nvidias = nvidias,
                             .profile = c.profile,
                             .mig_strategy = c.mig_strategy,
                             .config_file = c.config_file,
                             .flags = {},
                             .gpunode_flags = {},
                             .mps = false,
                             .kubelet_dir = cluster->device_plugin_dir()};
      std::unique_ptr<testing::PluginOnNode> plugin = node.Start(run);
      ASSERT_TRUE(AwaitAllocatable(want, seconds(60))) << plugin->process->Log();
      // No other resource of NVIDIA's names appeared.
      for (const auto& [name, quantity] : Node()["status"]["allocatable"].items()) {
        if (name.rfind("nvidia.com/", 0) == 0 && !want.contains(name)) {
          EXPECT_EQ(quantity, "0") << name;
        }
      }

      const std::string pod = std::string(nvidias ? "nvidia" : "gpunode") + "-two";
      testing::ProcessResult r =
          cluster->Kubectl({"create", "-f", "-"}, LocalPod(pod, {{"nvidia.com/gpu", "2"}}).dump());
      ASSERT_EQ(r.exit_code, 0) << r.err;
      r = cluster->Kubectl({"wait", "--for=condition=Ready", "pod/" + pod, "--timeout=60s"});
      EXPECT_EQ(r.exit_code, 0) << r.err << plugin->process->Log();
      EXPECT_EQ(CheckpointedDevices(Get({"pod", pod})["metadata"]["uid"]).size(), 2u);
      handed[nvidias] = SplitComma(VisibleDevicesOfContainer(pod));
      for (const std::string& device : handed[nvidias]) {
        EXPECT_TRUE(node.topology(c.profile).gpu_of.contains(device))
            << device << " is not a device of this node";
      }
      DeletePod(pod);
      plugin.reset();
      // The kubelet takes a stopped plugin's devices off the allocatable; wait for that, so the
      // next plugin's count is its own.
      EXPECT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "0"}}, seconds(60)));
    }
    // Both hand a pod two distinct devices: two GPUs, two replicas on two GPUs (the
    // `distributed` policy of both), or two MIG devices.
    EXPECT_EQ(handed[true].size(), 2u);
    EXPECT_EQ(handed[false].size(), 2u);
  }
}

// deploy/device-plugin/overlays/per-node-config as the pod would have it: its ServiceAccount and
// ClusterRole in the real cluster, its ConfigMap as the directory the kubelet mounts, NODE_NAME.
TEST(DevicePluginOnTheRealKubelet, FollowsTheNodeLabelUnderItsOwnRbac) {
  REQUIRE_NODE();
  const std::string overlay =
      std::string(build_paths::kSourceDir) + "/deploy/device-plugin/overlays/per-node-config";
  for (const char* file : {"rbac.yaml", "configs.yaml"}) {
    testing::ProcessResult r = cluster->Kubectl({"apply", "-f", overlay + "/" + file});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  testing::TempDir configs("gpunode-kubelet-test-configs");
  json map = Get({"configmap", "gpunode-device-plugin-configs", "-n", "kube-system"});
  ASSERT_TRUE(map.contains("data")) << map.dump();
  for (const auto& [key, text] : map["data"].items()) {
    std::ofstream(configs.path() + "/" + key) << text.get<std::string>();
  }
  std::string kubeconfig =
      cluster->ServiceAccountKubeconfig("kube-system", "gpunode-device-plugin");
  ASSERT_FALSE(kubeconfig.empty());
  const std::string node = cluster->node_name();
  Plugin plugin("dgx-h100", {},
                {"CONFIG_FILE=" + configs.path(), "CONFIG_DEFAULT=default", "NODE_NAME=" + node,
                 "KUBECONFIG=" + kubeconfig});
  ASSERT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "8"}})) << plugin.Log();
  // The labeller beside it, as GPU feature discovery runs: same config, same label, same grants.
  std::string features = configs.path() + "/../gfd-features";
  testing::BackgroundProcess labeller(
      {build_paths::kBinary, "--log-level", "info", "--sim", "dgx-h100", "labels", "-o", features},
      {"CONFIG_FILE=" + configs.path(), "CONFIG_DEFAULT=default", "NODE_NAME=" + node,
       "KUBECONFIG=" + kubeconfig});
  auto replicas_label = [&] {
    std::ifstream in(features);
    std::stringstream text;
    text << in.rdbuf();
    return json(LineAfter(text.str(), "nvidia.com/gpu.replicas="));
  };
  auto await_replicas = [&](const std::string& want) {
    return AwaitState(
               replicas_label, [&](const json& v) { return v == want; }, seconds(20)) == want;
  };
  EXPECT_TRUE(await_replicas("1")) << labeller.Log();

  auto label = [&](const std::string& value) {
    std::vector<std::string> args = {"label", "node", node};
    args.push_back(value.empty() ? "nvidia.com/device-plugin.config-"
                                 : "nvidia.com/device-plugin.config=" + value);
    if (!value.empty()) args.push_back("--overwrite");
    testing::ProcessResult r = cluster->Kubectl(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  };
  label("time-slicing-4");
  EXPECT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "32"}})) << plugin.Log();
  EXPECT_TRUE(await_replicas("4")) << labeller.Log();

  // A key the ConfigMap lacks: the running config stays, and the node gets a Warning event that
  // the plugin's ServiceAccount may create.
  label("mps4");
  json events = AwaitState(
      [&] {
        return Get({"events", "-A", "--field-selector",
                    "involvedObject.kind=Node,involvedObject.name=" + node +
                        ",reason=DevicePluginConfigRefused"});
      },
      [](const json& list) { return !list.value("items", json::array()).empty(); }, seconds(20));
  ASSERT_FALSE(events.value("items", json::array()).empty()) << plugin.Log();
  const json& event = events["items"][0];
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_THAT(event["message"].get<std::string>(),
              HasSubstr("nvidia.com/device-plugin.config=mps4: no such config"));
  EXPECT_EQ(Quantity(Node(), "allocatable", "nvidia.com/gpu"), "32");

  EXPECT_EQ(replicas_label(), "4");

  label("");
  EXPECT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "8"}})) << plugin.Log();
  EXPECT_TRUE(await_replicas("1")) << labeller.Log();
  labeller.Stop(SIGTERM);
}

// A Deployment of one pod asking for one GPU, and a PodDisruptionBudget over it.
void CreateGuardedDeployment(const std::string& name, const json& budget) {
  json labels = {{"app", name}};
  json deployment = {{"apiVersion", "apps/v1"},
                     {"kind", "Deployment"},
                     {"metadata", {{"name", name}, {"namespace", "default"}}},
                     {"spec",
                      {{"replicas", 1},
                       {"selector", {{"matchLabels", labels}}},
                       {"template",
                        {{"metadata", {{"labels", labels}}},
                         {"spec", LocalPodSpec({{"nvidia.com/gpu", "1"}})}}}}}};
  json pdb = {{"apiVersion", "policy/v1"},
              {"kind", "PodDisruptionBudget"},
              {"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec", budget}};
  pdb["spec"]["selector"] = {{"matchLabels", labels}};
  for (const json& object : {deployment, pdb}) {
    testing::ProcessResult r = cluster->Kubectl({"apply", "-f", "-"}, object.dump());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  testing::ProcessResult r = cluster->Kubectl(
      {"rollout", "status", "deployment/" + name, "-n", "default", "--timeout=60s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// drain and restore under deploy/cluster/rbac.yaml's grants, with the real Eviction API and the
// real disruption controller behind the budgets: one budget allows the eviction, one blocks it
// (429), and restore puts the node back only with every GPU healthy.
TEST(ClusterMaintenanceOnTheRealNode, DrainHonoursBudgetsAndRestoreUncordons) {
  REQUIRE_NODE();
  const std::string node = cluster->node_name();
  Plugin plugin("dgx-h100", {});
  ASSERT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "8"}})) << plugin.Log();
  std::string kubeconfig = KubeconfigWithTheGrantsOf("cluster", "gpunode-cluster");
  ASSERT_FALSE(kubeconfig.empty());
  testing::ProcessResult r = cluster->Kubectl(
      {"apply", "-k", std::string(build_paths::kSourceDir) + "/deploy/pod-notice"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // GPU feature discovery's count label, which restore compares the healthy GPUs with.
  r = cluster->Kubectl({"label", "node", node, "nvidia.com/gpu.count=8", "--overwrite"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  CreateGuardedDeployment("batch", {{"maxUnavailable", 1}});
  CreateGuardedDeployment("serving", {{"minAvailable", 1}});
  // The disruption controller has counted both budgets' pods.
  auto counted = [](const json& list) {
    int ready = 0;
    for (const json& pdb : list.value("items", json::array())) {
      ready += pdb["status"].value("currentHealthy", 0) == 1 &&
               pdb["status"].value("observedGeneration", 0) >= 1;
    }
    return ready == 2;
  };
  json budgets = AwaitState([] { return Get({"pdb", "-n", "default"}); }, counted, seconds(30));
  ASSERT_TRUE(counted(budgets)) << budgets.dump();
  std::string batch_pod, serving_pod;
  json pods = Get({"pods", "-n", "default"});
  for (const json& pod : pods["items"]) {
    std::string name = pod["metadata"]["name"];
    if (name.rfind("batch-", 0) == 0) batch_pod = name;
    if (name.rfind("serving-", 0) == 0) serving_pod = name;
  }
  ASSERT_FALSE(batch_pod.empty());
  ASSERT_FALSE(serving_pod.empty());

  r = Gpunode({"cluster", "drain", node, "--cordon", "--evict-after", "1s", "--eviction-timeout",
               "3s", "--eviction-retry-interval", "1s", "--poll-interval", "1s", "--kubeconfig",
               kubeconfig});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  std::string said = r.out + r.err;
  // The real apiserver's 429, with the budget's own words, retried until the eviction timeout.
  EXPECT_THAT(said, HasSubstr("cannot evict default/" + serving_pod +
                              " yet: Cannot evict pod as "
                              "it would violate the pod's disruption budget."));
  EXPECT_THAT(said, HasSubstr("The disruption budget serving needs 1 healthy pods and has 1 "
                              "currently"));
  EXPECT_THAT(said, HasSubstr("evicted: default/" + batch_pod));
  EXPECT_THAT(said, HasSubstr("incomplete"));
  EXPECT_TRUE(Get({"pod", batch_pod, "-n", "default"}).is_null())
      << "the evicted pod is still there";
  EXPECT_FALSE(Get({"pod", serving_pod, "-n", "default"}).is_null());
  json drained = Node();
  EXPECT_EQ(drained["spec"].value("unschedulable", false), true);
  EXPECT_EQ(drained["metadata"]["labels"].value("nvidia.com/gpu.state", ""), "draining");
  // The owners were told, under the same grants: the pod, its ReplicaSet and the Deployment
  // above it each got the Event, and the pod the annotations.
  EXPECT_THAT(said, ::testing::Not(HasSubstr("cannot tell")));
  std::set<std::string> told;
  const json events = Get({"events", "-n", "default"});
  for (const json& event : events.value("items", json::array())) {
    if (event.value("reason", "") != "NodeDraining") continue;
    EXPECT_EQ(event.value("reportingComponent", ""), "gpunode-cluster-drain");
    told.insert(event["involvedObject"].value("kind", "") + "/" +
                event["involvedObject"].value("name", ""));
  }
  EXPECT_TRUE(told.count("Pod/" + serving_pod)) << ::testing::PrintToString(told);
  EXPECT_TRUE(told.count("Deployment/serving")) << ::testing::PrintToString(told);
  EXPECT_TRUE(told.count("Deployment/batch")) << ::testing::PrintToString(told);
  json serving = Get({"pod", serving_pod, "-n", "default"});
  EXPECT_EQ(serving["metadata"]["annotations"].value("gpunode.io/node-draining", ""), node);
  EXPECT_NE(serving["metadata"]["annotations"].value("gpunode.io/eviction-deadline", ""), "");
  // The grant to patch pods is that and no more: the real admission chain refuses anything else.
  r = cluster->Kubectl({"--kubeconfig", kubeconfig, "label", "pod", serving_pod, "-n", "default",
                        "app=elsewhere", "--overwrite"});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.err, HasSubstr("gpunode's service accounts may change only a pod's annotations "
                               "under gpunode.io/"));
  r = cluster->Kubectl({"--kubeconfig", kubeconfig, "annotate", "pod", serving_pod, "-n", "default",
                        "owner=someone-else"});
  EXPECT_NE(r.exit_code, 0) << r.out;

  for (const char* name : {"batch", "serving"}) {
    cluster->Kubectl({"delete", "deployment", name, "-n", "default", "--wait=true"});
    cluster->Kubectl({"delete", "pdb", name, "-n", "default"});
  }
  r = Gpunode({"cluster", "restore", node, "--kubeconfig", kubeconfig});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  json restored = Node();
  EXPECT_FALSE(restored["spec"].value("unschedulable", false)) << restored["spec"].dump();
  EXPECT_FALSE(restored["metadata"]["labels"].contains("nvidia.com/gpu.state"));
  cluster->Kubectl({"label", "node", node, "nvidia.com/gpu.count-"});
}

// why-pending's account of a pod the real scheduler cannot place, next to the scheduler's own
// FailedScheduling event for the same pod: the same reasons in the same words, and a verdict.
TEST(WhyPendingOnTheRealScheduler, SaysWhatTheSchedulerSays) {
  REQUIRE_NODE();
  const std::string node = cluster->node_name();
  Plugin plugin("dgx-h100", {});
  ASSERT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "8"}})) << plugin.Log();
  struct Case {
    std::string name;
    json limits;
    json spec_extra;      // merged into the pod's spec
    std::string taint;    // put on the node for this case
    std::string verdict;  // why-pending's
  };
  const std::vector<Case> cases = {
      {"too-many", {{"nvidia.com/gpu", "9"}}, json::object(), "", "never"},
      {"mig-absent", {{"nvidia.com/mig-1g.10gb", "1"}}, json::object(), "", "never"},
      {"selector",
       {{"nvidia.com/gpu", "1"}},
       {{"nodeSelector", {{"pool", "inference"}}}},
       "",
       "never"},
      {"taint",
       {{"nvidia.com/gpu", "1"}},
       json::object(),
       "dedicated=inference:NoSchedule",
       "never"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    if (!c.taint.empty()) cluster->Kubectl({"taint", "node", node, c.taint});
    json pod = LocalPod(c.name, c.limits);
    pod["spec"].update(c.spec_extra);
    testing::ProcessResult r = cluster->Kubectl({"create", "-f", "-"}, pod.dump());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json events = AwaitState(
        [&] {
          return Get({"events", "-n", "default", "--field-selector",
                      "involvedObject.name=" + c.name + ",reason=FailedScheduling"});
        },
        [](const json& list) { return !list.value("items", json::array()).empty(); }, seconds(30));
    ASSERT_FALSE(events.value("items", json::array()).empty()) << "the scheduler said nothing";
    std::string scheduler = events["items"][0]["message"];
    // The filters' tally ends at the first ". "; the scheduler appends what its PostFilter
    // plugins found (DRA's "no new claims to deallocate", preemption), which why-pending does not
    // judge.
    std::string filters = scheduler.substr(0, scheduler.find(". ") + 1);

    r = Gpunode({"cluster", "why-pending", c.name, "-n", "default", "--kubeconfig",
                 cluster->admin_kubeconfig()});
    EXPECT_EQ(LineAfter(r.out, "scheduler: "), filters)
        << r.out << "\nkube-scheduler: " << scheduler;
    EXPECT_THAT(LineAfter(r.out, "verdict: "), ::testing::StartsWith(c.verdict)) << r.out;
    EXPECT_EQ(LineAfter(r.out, "last scheduling attempt: "), scheduler) << r.out;
    cluster->Kubectl({"delete", "pod", c.name, "-n", "default", "--wait=true"});
    if (!c.taint.empty()) cluster->Kubectl({"taint", "node", node, c.taint + "-"});
  }
}

// What GPU feature discovery and NFD would put on the node: the labeller's features, as labels.
void LabelLikeGpuFeatureDiscovery(const std::string& sim) {
  testing::ProcessResult features = Gpunode({"--sim", sim, "labels", "--oneshot", "-o", "-"});
  ASSERT_EQ(features.exit_code, 0) << features.err;
  std::vector<std::string> args = {"label", "node", cluster->node_name(), "--overwrite"};
  std::istringstream lines(features.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) args.push_back(line);
  }
  testing::ProcessResult r = cluster->Kubectl(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// The device plugin runs beside the kubelet, outside a pod (its image cannot be built here): the
// DaemonSet of deploy/device-plugin/base, with the local image in place of gpunode's, stands for
// its pods. Its node affinity, tolerations and labels are deploy/'s, so verify's device-plugin
// step and the MIG manager's pause meet the DaemonSet an operator applies.
std::string StandInDevicePluginDaemonSet() {
  testing::ProcessResult r = cluster->Kubectl(
      {"create", "--dry-run=client", "-o", "json", "-f",
       std::string(build_paths::kSourceDir) + "/deploy/device-plugin/base/daemonset.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  json set = json::parse(r.out, nullptr, false);
  if (set.is_discarded()) return "";
  json& container = set["spec"]["template"]["spec"]["containers"][0];
  container["image"] = testing::LocalCluster::kLocalImage;
  container["imagePullPolicy"] = "Never";
  r = cluster->Kubectl({"apply", "-f", "-"}, set.dump());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = cluster->Kubectl({"rollout", "status", "daemonset/gpunode-device-plugin", "-n", "kube-system",
                        "--timeout=60s"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return set["metadata"]["name"];
}

// The name of the stand-in plugin pod on the node, or "" when there is none.
std::string DevicePluginPodName() {
  json pods =
      Get({"pods", "-n", "kube-system", "-l", "app.kubernetes.io/name=gpunode-device-plugin"});
  for (const json& pod : pods.value("items", json::array())) {
    if (pod["metadata"].contains("deletionTimestamp")) continue;
    return pod["metadata"]["name"];
  }
  return "";
}

// The node as an upgrade finds it: `plugin` advertising its 8 GPUs, the labels GPU feature
// discovery sets, deploy/'s device plugin DaemonSet; a kubeconfig with deploy/upgrade's grants,
// or "" (with the failure reported) when one of these did not come about.
std::string ReadyForUpgrade(const Plugin& plugin) {
  if (!AwaitAllocatable({{"nvidia.com/gpu", "8"}})) {
    ADD_FAILURE() << "the plugin's GPUs did not reach the node:\n" << plugin.Log();
    return "";
  }
  LabelLikeGpuFeatureDiscovery("dgx-h100");
  if (StandInDevicePluginDaemonSet().empty()) return "";
  return KubeconfigWithTheGrantsOf("upgrade", "gpunode-upgrade");
}

// `cluster upgrade` under deploy/upgrade/rbac.yaml's grants, taking the real node through the
// GPU Operator's states to upgrade-done, holding the real Lease throughout: it renews it while it
// waits, a second copy finds it held, and it is released at the end. Maintenance is "wait for the
// node to report the driver", which the test plays as a driver installer and GFD would.
TEST(UpgradeOnTheRealNode, RollsTheNodeThroughHoldingTheLease) {
  REQUIRE_NODE();
  const std::string node = cluster->node_name();
  Plugin plugin("dgx-h100", {});
  std::string kubeconfig = ReadyForUpgrade(plugin);
  ASSERT_FALSE(kubeconfig.empty());
  testing::ProcessResult r;
  r = cluster->Kubectl({"label", "node", node, "pool=training",
                        "nvidia.com/cuda.driver-version.full=535.129.03", "--overwrite"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  auto upgrade = [&](const std::string& identity) {
    return std::vector<std::string>{build_paths::kBinary,
                                    "cluster",
                                    "upgrade",
                                    "--driver-version",
                                    "550.90.07",
                                    "--pools",
                                    "training",
                                    "--soak",
                                    "3s",
                                    "--soak-check-interval",
                                    "1s",
                                    "--poll-interval",
                                    "1s",
                                    "--lease-duration",
                                    "15s",
                                    "--lease-namespace",
                                    "gpunode-system",
                                    "-n",
                                    "gpunode-system",
                                    "--image",
                                    testing::LocalCluster::kLocalImage,
                                    "--command",
                                    "/visible-gpus 2",
                                    "--identity",
                                    identity,
                                    "--kubeconfig",
                                    kubeconfig};
  };
  testing::BackgroundProcess first(upgrade("copy-a"));
  auto state_is = [&](const std::string& state) {
    return [state](const json& n) {
      return n["metadata"]["labels"].value("nvidia.com/gpu-driver-upgrade-state", "") == state;
    };
  };
  json upgrading = AwaitState(Node, state_is("node-maintenance-required"), seconds(60));
  ASSERT_TRUE(state_is("node-maintenance-required")(upgrading))
      << upgrading["metadata"].dump() << first.Log();
  EXPECT_TRUE(upgrading["spec"].value("unschedulable", false));

  json lease = Get({"lease", "gpunode-upgrade", "-n", "gpunode-system"});
  ASSERT_TRUE(lease.contains("spec")) << first.Log();
  EXPECT_EQ(lease["spec"]["holderIdentity"], "copy-a");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 15);
  // Renewed every third of the duration, while the step waits.
  std::string renewed = lease["spec"].value("renewTime", "");
  json later = AwaitState(
      [] {
        return Get({"lease", "gpunode-upgrade", "-n", "gpunode-system"});
      },
      [&](const json& l) { return l["spec"].value("renewTime", "") != renewed; }, seconds(15));
  EXPECT_NE(later["spec"].value("renewTime", ""), renewed) << first.Log();
  EXPECT_EQ(later["spec"]["holderIdentity"], "copy-a");

  testing::ProcessResult second = testing::RunProcess(upgrade("copy-b"));
  EXPECT_EQ(second.exit_code, 1) << second.out << second.err;
  EXPECT_THAT(second.out + second.err, HasSubstr("another gpunode cluster upgrade is running"));
  EXPECT_THAT(second.out + second.err, HasSubstr("copy-a"));

  // The new driver is in: the node reports it, and the rollout goes on to its end.
  r = cluster->Kubectl(
      {"label", "node", node, "nvidia.com/cuda.driver-version.full=550.90.07", "--overwrite"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::optional<int> exit_code = first.Wait(milliseconds(120000));
  ASSERT_TRUE(exit_code.has_value()) << first.Log();
  EXPECT_EQ(*exit_code, 0) << first.Stdout() << first.Log();
  json done = Node();
  EXPECT_EQ(done["metadata"]["labels"].value("nvidia.com/gpu-driver-upgrade-state", ""),
            "upgrade-done")
      << first.Log();
  EXPECT_FALSE(done["spec"].value("unschedulable", false));
  EXPECT_FALSE(done["metadata"]["labels"].contains("nvidia.com/gpu.state"));
  json released = Get({"lease", "gpunode-upgrade", "-n", "gpunode-system"});
  EXPECT_NE(released["spec"].value("holderIdentity", ""), "copy-a") << released.dump();

  cluster->Kubectl({"label", "node", node, "pool-", "nvidia.com/gpu-driver-upgrade-state-"});
}

// `cluster upgrade --maintenance-job` on the real node: the Job controller runs gpunode's Job,
// pinned to the cordoned node, with the environment the upgrade gives it; its container, standing
// in for a driver installer, is the labeller of the now upgraded (simulated) driver, which
// reports the new version on the Node under deploy/labels' grants, and the rollout goes on to
// its end with nothing else touching the node.
TEST(UpgradeOnTheRealNode, RunsTheMaintenanceJobOnTheCordonedNode) {
  REQUIRE_NODE();
  const std::string node = cluster->node_name();
  Plugin plugin("dgx-h100", {});
  std::string kubeconfig = ReadyForUpgrade(plugin);
  ASSERT_FALSE(kubeconfig.empty());
  // deploy/labels' grants, for its ServiceAccount as installed in the Job's namespace (the
  // policy there matches the account by name in any namespace).
  const std::string labels_rbac = std::string(build_paths::kSourceDir) + "/deploy/labels/rbac.yaml";
  // Gone afterwards, whatever happens here: the chart's suite installs the same cluster-wide
  // objects under Helm's ownership.
  absl::Cleanup remove_labels_rbac = [&] {
    cluster->Kubectl({"delete", "--ignore-not-found", "-f", labels_rbac});
    cluster->Kubectl(
        {"delete", "--ignore-not-found", "clusterrolebinding", "gpunode-labels-in-gpunode-system"});
    cluster->Kubectl({"delete", "--ignore-not-found", "serviceaccount", "gpunode-labels", "-n",
                      "gpunode-system"});
  };
  testing::ProcessResult r = cluster->Kubectl({"apply", "-f", labels_rbac});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  cluster->Kubectl({"create", "serviceaccount", "gpunode-labels", "-n", "gpunode-system"});
  cluster->Kubectl({"create", "clusterrolebinding", "gpunode-labels-in-gpunode-system",
                    "--clusterrole", "gpunode-labels", "--serviceaccount",
                    "gpunode-system:gpunode-labels"});
  r = cluster->Kubectl({"label", "node", node, "pool=training",
                        "nvidia.com/cuda.driver-version.full=535.129.03", "--overwrite"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // The pod reaches the apiserver on loopback (host network: this cluster has no Service
  // proxy) with the token the kubelet gives it, bound to the pod and its node.
  std::string port = cluster->server().substr(cluster->server().rfind(':') + 1);
  json container = {
      {"name", "driver-installer"},
      {"image", testing::LocalCluster::kGpunodeImage},
      {"imagePullPolicy", "Never"},
      // The upgrade's environment, expanded by the kubelet.
      {"command",
       {"gpunode", "--sim", "dgx-h100", "labels", "--write", "node", "--oneshot", "--node-name",
        "$(GPUNODE_NODE_NAME)"}},
      {"env", json::array({{{"name", "KUBERNETES_SERVICE_HOST"}, {"value", "127.0.0.1"}},
                           {{"name", "KUBERNETES_SERVICE_PORT"}, {"value", port}}})}};
  json pod_spec = {{"restartPolicy", "Never"},
                   {"serviceAccountName", "gpunode-labels"},
                   {"hostNetwork", true},
                   {"containers", json::array({container})}};
  json job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", "driver-install"}}},
              {"spec", {{"backoffLimit", 0}, {"template", {{"spec", pod_spec}}}}}};
  testing::TempDir work("gpunode-maintenance-job");
  std::string manifest = work.path() + "/maintenance-job.json";
  std::ofstream(manifest) << job.dump();

  r = Gpunode({"cluster",
               "upgrade",
               "--driver-version",
               "550.90.07",
               "--pools",
               "training",
               "--maintenance-job",
               manifest,
               "--maintenance-timeout",
               "2m",
               "--soak",
               "2s",
               "--soak-check-interval",
               "1s",
               "--poll-interval",
               "1s",
               "--lease-namespace",
               "gpunode-system",
               "-n",
               "gpunode-system",
               "--image",
               testing::LocalCluster::kLocalImage,
               "--command",
               "/visible-gpus 2",
               "--kubeconfig",
               kubeconfig});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.err,
              HasSubstr("maintenance Job gpunode-system/gpunode-upgrade-" + node + " created"));
  EXPECT_THAT(r.err, HasSubstr("maintenance Job gpunode-upgrade-" + node + " succeeded"));
  json done = Node();
  const json& labels = done["metadata"]["labels"];
  EXPECT_EQ(labels.value("nvidia.com/gpu-driver-upgrade-state", ""), "upgrade-done") << r.err;
  // Written by the labeller in the Job: the label is among those it owns.
  EXPECT_EQ(labels.value("nvidia.com/cuda.driver-version.full", ""), "550.90.07");
  EXPECT_THAT(done["metadata"]["annotations"].value("gpunode.io/labels", ""),
              HasSubstr("nvidia.com/cuda.driver-version.full"));
  EXPECT_FALSE(done["spec"].value("unschedulable", false));
  // A Job that succeeded is deleted.
  EXPECT_TRUE(Get({"job", "gpunode-upgrade-" + node, "-n", "gpunode-system"}).is_null());

  cluster->Kubectl({"label", "node", node, "pool-", "nvidia.com/gpu-driver-upgrade-state-"});
}

// cluster verify end to end on the real node: its smoke pod goes through the real scheduler,
// the kubelet's admission calls Allocate, containerd runs it, and the program in it sees exactly
// the two GPUs it was given.
TEST(VerifyOnTheRealNode, TheSmokePodRunsWithTwoGpus) {
  REQUIRE_NODE();
  const std::string node = cluster->node_name();
  Plugin plugin("dgx-h100", WithDeviceNodes());
  ApplyTheNvidiaRuntimeClass();
  ASSERT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "8"}})) << plugin.Log();
  LabelLikeGpuFeatureDiscovery("dgx-h100");
  StandInDevicePluginDaemonSet();
  std::string kubeconfig = KubeconfigWithTheGrantsOf("cluster", "gpunode-cluster");
  ASSERT_FALSE(kubeconfig.empty());
  testing::ProcessResult r;

  // The smoke pod is verify's own: gpunode's image running `gpunode doctor --in-container`,
  // with the nvidia runtime handler. The workload, a pod of its own after the smoke pod, runs
  // a program that exits 0 only with exactly the two GPUs, standing in for a CUDA sample.
  r = Gpunode({"cluster", "verify", node, "-n", "gpunode-system", "--runtime-class", "nvidia",
               "--workload-image", testing::LocalCluster::kLocalImage, "--workload-command",
               "/visible-gpus 2", "--timeout", "60s", "-o", "json", "--kubeconfig", kubeconfig});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  json report = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << r.out << r.err;
  std::map<std::string, std::string> results;
  std::string smoke_evidence;
  for (const json& n : report.value("nodes", json::array())) {
    for (const json& step : n.value("steps", json::array())) {
      results[step["step"]] = step["result"];
      if (step["step"] == "smoke-pod") smoke_evidence = step.dump();
    }
  }
  for (const char* step :
       {"ready", "labels", "device-plugin", "capacity", "smoke-pod", "workload"}) {
    EXPECT_EQ(results[step], "pass") << step << "\n" << r.out;
  }
  // The doctor report in the pod's log, which the apiserver read from the kubelet, is the
  // evidence: NVML in the container saw exactly the two GPUs the kubelet allocated.
  EXPECT_THAT(smoke_evidence,
              HasSubstr("doctor in the pod with 2 GPU(s): container.visible-devices ok: 2 GPU(s) "
                        "listed, all visible to NVML and no other"))
      << r.out;
  // The smoke pod and the workload's are gone afterwards.
  EXPECT_TRUE(Get({"pod", "gpunode-verify-" + node, "-n", "gpunode-system"}).is_null());
  EXPECT_TRUE(
      Get({"pod", "gpunode-verify-" + node + "-workload", "-n", "gpunode-system"}).is_null());
}

// docs/DOCTOR.md's `kubectl exec` line, word for word, on a pod of gpunode's image given two GPUs
// by the real kubelet: the apiserver reaches the kubelet's exec endpoint, and doctor inside the
// container finds what the runtime gave it.
TEST(DocsOnTheRealNode, TheInContainerDoctorLineRuns) {
  REQUIRE_NODE();
  const std::string line =
      "kubectl exec -it my-training-pod -- gpunode doctor --in-container --cuda 12.4";
  std::ifstream in(std::string(build_paths::kSourceDir) + "/docs/DOCTOR.md");
  std::string doc((std::istreambuf_iterator<char>(in)), {});
  EXPECT_THAT(doc, HasSubstr(line)) << "no longer in docs/DOCTOR.md";
  Plugin plugin("dgx-h100", WithDeviceNodes());
  ASSERT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "8"}})) << plugin.Log();
  ApplyTheNvidiaRuntimeClass();
  json pod = LocalPod("my-training-pod", {{"nvidia.com/gpu", "2"}});
  pod["spec"]["runtimeClassName"] = "nvidia";
  pod["spec"]["containers"][0]["image"] = testing::LocalCluster::kGpunodeImage;
  pod["spec"]["containers"][0]["command"] = {"/pause"};
  testing::ProcessResult r = cluster->Kubectl({"create", "-f", "-"}, pod.dump());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = cluster->Kubectl({"wait", "--for=condition=Ready", "pod/my-training-pod", "--timeout=60s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  std::string path =
      std::filesystem::path(cluster->kubectl()).parent_path().string() + ":/usr/bin:/bin";
  r = testing::RunProcess({"/bin/bash", "-c", line},
                          {"PATH=" + path, "KUBECONFIG=" + cluster->admin_kubeconfig()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("container.visible-devices   2 GPU(s) listed, all visible to NVML "
                               "and no other"))
      << r.out;
  EXPECT_THAT(r.out, HasSubstr("container.cuda-compat       the driver (CUDA up to 12.4) runs "
                               "CUDA 12.4"))
      << r.out;
  EXPECT_THAT(r.out, HasSubstr(", 0 fail,")) << r.out;
  DeletePod("my-training-pod");
}

// The MIG manager under deploy/mig-manager/rbac.yaml's grants, following the real Node's
// nvidia.com/mig.config: it pauses the device plugin through its deploy label, the DaemonSet
// controller really stops the plugin's pod, the layout is applied to the simulated GPUs, and the
// plugin's pod comes back when the label is resumed.
TEST(MigManagerOnTheRealNode, PausesThePluginThroughTheDaemonSetController) {
  REQUIRE_NODE();
  const std::string node = cluster->node_name();
  LabelLikeGpuFeatureDiscovery("dgx-h100");
  StandInDevicePluginDaemonSet();
  std::string before = DevicePluginPodName();
  ASSERT_FALSE(before.empty());
  std::string kubeconfig = KubeconfigWithTheGrantsOf("mig-manager", "gpunode-mig-manager");
  ASSERT_FALSE(kubeconfig.empty());
  testing::ProcessResult r;

  testing::TempDir dir("gpunode-kubelet-test-mig");
  std::string config = dir.path() + "/config.yaml";
  std::ofstream(config) << "version: v1\nmig-configs:\n  gpu2-small:\n    - devices: [2]\n"
                           "      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 7}\n";
  std::string state = "GPUNODE_SIM_STATE=" + dir.path() + "/node.mig";
  testing::BackgroundProcess manager(
      {build_paths::kBinary, "--log-level", "info", "--sim", "a100-mig", "mig", "manager", "-f",
       config, "--node", node, "--client-timeout", "60s"},
      {state, "KUBECONFIG=" + kubeconfig});
  r = cluster->Kubectl({"label", "node", node, "nvidia.com/mig.config=gpu2-small", "--overwrite"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // While the layout changes the plugin's label is paused and its pod is gone.
  json paused = AwaitState(
      Node,
      [](const json& n) {
        return n["metadata"]["labels"].value("nvidia.com/gpu.deploy.device-plugin", "") ==
               "paused-for-mig-change";
      },
      seconds(30));
  EXPECT_EQ(paused["metadata"]["labels"].value("nvidia.com/gpu.deploy.device-plugin", ""),
            "paused-for-mig-change")
      << manager.Log();
  auto state_of = [](const json& n) {
    return n["metadata"]["labels"].value("nvidia.com/mig.config.state", "");
  };
  json done = AwaitState(
      Node, [&](const json& n) { return state_of(n) == "success" || state_of(n) == "failed"; },
      seconds(90));
  EXPECT_EQ(state_of(done), "success") << manager.Log();
  EXPECT_TRUE(Get({"pod", before, "-n", "kube-system"}).is_null())
      << "the plugin's pod was not stopped";
  EXPECT_EQ(done["metadata"]["labels"].value("nvidia.com/gpu.deploy.device-plugin", ""), "true");
  // The DaemonSet controller brings the plugin back.
  json back =
      AwaitState([] { return json(DevicePluginPodName()); },
                 [&](const json& name) { return !name.get<std::string>().empty(); }, seconds(30));
  EXPECT_NE(back.get<std::string>(), before);
  EXPECT_NE(back.get<std::string>(), "");

  testing::ProcessResult inventory = testing::RunProcess(
      {build_paths::kBinary, "--sim", "a100-mig", "inventory", "-o", "json"}, {state});
  json gpus = json::parse(inventory.out, nullptr, false)["gpus"];
  ASSERT_TRUE(gpus.is_array()) << inventory.out << inventory.err;
  EXPECT_EQ(gpus[2]["mig_devices"].size(), 7u);
  manager.Stop(SIGTERM);
  cluster->Kubectl(
      {"label", "node", node, "nvidia.com/mig.config-", "nvidia.com/mig.config.state-"});
}

// The chart's DaemonSets on the real node: `helm install` of deploy/helm/gpunode with the local
// image in place of gpunode's (its image cannot be built here), and the DaemonSet controller, the
// scheduler and the kubelet place and run the plugin's and the exporter's pods on the GPU node
// with the chart's node affinity, tolerations, hostPath volumes, hostPID and security contexts;
// `helm uninstall` stops them.
TEST(ChartOnTheRealNode, TheDaemonSetsRunOnTheGpuNodeUntilUninstalled) {
  REQUIRE_NODE();
  testing::HelmRunner helm;
  if (!helm.missing().empty()) GTEST_SKIP() << helm.missing();
  LabelLikeGpuFeatureDiscovery("dgx-h100");
  const std::string image = testing::LocalCluster::kLocalImage;
  const std::string ns = "gpunode-helm-node";
  // The device plugin with the exporter; then, on the same node moved to DRA by its label, the DRA
  // plugin with the exporter (the chart refuses both plugins on one node).
  struct Install {
    std::vector<std::string> values;
    std::vector<std::string> daemon_sets;
  };
  const std::vector<Install> installs = {
      {{"--set", "exporter.enabled=true"}, {"gpunode-device-plugin", "gpunode-exporter"}},
      {{"--set", "exporter.enabled=true", "--set", "devicePlugin.enabled=false", "--set",
        "draPlugin.enabled=true"},
       {"gpunode-dra-plugin", "gpunode-exporter"}}};
  for (const Install& install : installs) {
    SCOPED_TRACE(install.daemon_sets[0]);
    bool dra = install.daemon_sets[0] == "gpunode-dra-plugin";
    if (dra) {
      testing::ProcessResult labelled =
          cluster->Kubectl({"label", "node", cluster->node_name(), "--overwrite",
                            "nvidia.com/gpu.deploy.dra-plugin=true"});
      ASSERT_EQ(labelled.exit_code, 0) << labelled.err;
    }
    std::vector<std::string> args = {"install",
                                     "gpunode",
                                     testing::HelmRunner::Chart(),
                                     "-n",
                                     ns,
                                     "--create-namespace",
                                     "--set",
                                     "image.repository=" + image.substr(0, image.find(':')),
                                     "--set",
                                     "image.tag=" + image.substr(image.find(':') + 1),
                                     "--set",
                                     "image.pullPolicy=Never",
                                     "--set",
                                     "exporter.runtimeClassName=null"};
    args.insert(args.end(), install.values.begin(), install.values.end());
    testing::ProcessResult r = helm.Run(args, {"KUBECONFIG=" + cluster->admin_kubeconfig()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    // Running, not ready: the stand-in image answers no probe (the exporter's /healthz).
    for (const std::string& set : install.daemon_sets) {
      json pods = AwaitState(
          [&] {
            return Get({"pods", "-n", ns, "-l", "app.kubernetes.io/name=" + set});
          },
          [](const json& pods) {
            const json items = pods.value("items", json::array());
            return items.size() == 1 && items[0]["status"].value("phase", "") == "Running";
          },
          seconds(60));
      ASSERT_EQ(pods.value("items", json::array()).size(), 1u) << set << ": " << pods.dump();
      const json& pod = pods["items"][0];
      EXPECT_EQ(pod["spec"]["nodeName"], cluster->node_name()) << set;
      EXPECT_EQ(pod["status"]["phase"], "Running") << set << ": " << pod["status"].dump();
    }
    if (dra) {
      // NVIDIA's DeviceClasses came with it.
      EXPECT_FALSE(Get({"deviceclass", "gpu.nvidia.com"}).is_null());
    }
    r = helm.Run({"uninstall", "gpunode", "-n", ns, "--wait"},
                 {"KUBECONFIG=" + cluster->admin_kubeconfig()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json left = AwaitState(
        [&] {
          return Get({"pods", "-n", ns});
        },
        [](const json& pods) { return pods.value("items", json::array()).empty(); }, seconds(60));
    EXPECT_TRUE(left.value("items", json::array()).empty()) << left.dump();
    if (dra) {
      cluster->Kubectl(
          {"label", "node", cluster->node_name(), "nvidia.com/gpu.deploy.dra-plugin-"});
    }
  }
  cluster->Kubectl({"delete", "namespace", ns, "--wait=false"});
}

// A driver root with what CDI discovery requires of a driver: libcuda and libnvidia-ml of the
// simulated driver's version.
std::string DriverRootFor(const testing::TempDir& dir, const std::string& sim) {
  testing::ProcessResult r = Gpunode({"--sim", sim, "inventory", "-o", "json"});
  std::string version = json::parse(r.out)["driver_version"];
  std::string lib = dir.path() + "/driver/usr/lib/x86_64-linux-gnu";
  std::filesystem::create_directories(lib);
  for (const char* name : {"libcuda.so.", "libnvidia-ml.so."})
    std::ofstream(lib + "/" + name + version);
  return dir.path() + "/driver";
}

// `gpunode dra-plugin` on a simulated node, under deploy/dra's RBAC, registering with the real
// kubelet.
class DraPlugin {
 public:
  DraPlugin(const testing::TempDir& dir, const std::string& sim, const std::string& kubeconfig,
            const std::vector<std::string>& extra = {},
            const std::vector<std::string>& extra_env = {})
      : cdi_root_(dir.path() + "/cdi") {
    std::vector<std::string> args = {build_paths::kBinary,
                                     "--log-level",
                                     "info",
                                     "--sim",
                                     sim,
                                     "dra-plugin",
                                     "--kubelet-dir",
                                     cluster->kubelet_root(),
                                     "--cdi-root",
                                     cdi_root_,
                                     "--nvidia-driver-root",
                                     DriverRootFor(dir, sim),
                                     "--nvidia-cdi-hook-path",
                                     "",
                                     "--rescan-interval",
                                     "1s"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<std::string> env = {"KUBECONFIG=" + kubeconfig,
                                    "NODE_NAME=" + cluster->node_name()};
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    process_ = std::make_unique<testing::BackgroundProcess>(args, env);
  }
  ~DraPlugin() { process_->Stop(SIGTERM); }
  // As a crash or an OOM kill would end it: no clean-up of its own.
  void Kill() { process_->Stop(SIGKILL); }
  std::string Log() const { return process_->Log(); }
  bool WaitForLog(const std::string& text) const {
    return process_->WaitForLog(text, milliseconds(30000));
  }
  std::string SpecPath(const std::string& claim_uid) const {
    return cdi_root_ + "/k8s.gpu.nvidia.com-claim_" + claim_uid + ".json";
  }
  // `gpunode doctor`'s dra.* findings for this node, by id.
  std::map<std::string, json> Doctor(const std::string& sim) const {
    testing::ProcessResult r = Gpunode({"--sim", sim, "doctor", "-o", "json", "--kubelet-root-dir",
                                        cluster->kubelet_root(), "--cdi-root", cdi_root_});
    json report = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(report.is_discarded()) << r.out << r.err;
    std::map<std::string, json> findings;
    for (const json& finding : report.value("findings", json::array())) {
      if (finding["layer"] == "dra") findings[finding["id"]] = finding;
    }
    return findings;
  }

 private:
  std::string cdi_root_;
  std::unique_ptr<testing::BackgroundProcess> process_;
};

json NodeSlices() {
  return Get({"resourceslices", "--field-selector", "spec.nodeName=" + cluster->node_name()});
}

// A pod of the local image whose container uses one claim made from `template_name`.
void CreateClaimPod(const std::string& name, const std::string& template_name) {
  json pod = LocalPod(name, json::object());
  pod["spec"]["containers"][0]["resources"] = {{"claims", {{{"name", "gpu"}}}}};
  pod["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimTemplateName", template_name}}};
  testing::ProcessResult r = cluster->Kubectl({"create", "-f", "-"}, pod.dump());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = cluster->Kubectl({"wait", "--for=condition=Ready", "pod/" + name, "--timeout=60s"});
  ASSERT_EQ(r.exit_code, 0)
      << r.err << Get({"pod", name}).value("status", json()).dump()
      << Get({"events", "--field-selector", "involvedObject.name=" + name}).dump();
}

// The ResourceClaim the pod's template made, as the API server holds it.
json ClaimOf(const std::string& pod_name) {
  json pod = Get({"pod", pod_name});
  std::string claim = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"];
  return Get({"resourceclaim", claim});
}

std::set<std::string> AllocatedDevices(const json& claim) {
  std::set<std::string> devices;
  for (const json& result : claim["status"]["allocation"]["devices"]["results"]) {
    EXPECT_EQ(result["driver"], "gpu.nvidia.com");
    EXPECT_EQ(result["pool"], cluster->node_name());
    devices.insert(result["device"].get<std::string>());
  }
  return devices;
}

// The start of every DRA test: no device plugin left serving the node (NVIDIA's rule, which the
// plugin enforces; the kubelet takes an ended plugin's GPUs out of allocatable at once), NVIDIA's
// DeviceClasses applied, and a kubeconfig with deploy/dra's grants, returned (empty on failure,
// which is recorded).
std::string StartDraTest() {
  AwaitState(
      Node,
      [](const json& n) {
        std::string gpus = Quantity(n, "allocatable", "nvidia.com/gpu");
        return gpus.empty() || gpus == "0";
      },
      seconds(30));
  testing::ProcessResult r = cluster->Kubectl(
      {"apply", "-f", std::string(build_paths::kSourceDir) + "/deploy/dra/deviceclasses.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string kubeconfig = KubeconfigWithTheGrantsOf("dra", "gpunode-dra-plugin");
  EXPECT_FALSE(kubeconfig.empty());
  return r.exit_code == 0 ? kubeconfig : "";
}

// A ResourceClaimTemplate in `default` with one request, `name`'s `exactly` as given.
void ApplyClaimTemplate(const std::string& template_name, const std::string& request,
                        const json& exactly) {
  json claim_template = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaimTemplate"},
      {"metadata", {{"name", template_name}, {"namespace", "default"}}},
      {"spec",
       {{"spec",
         {{"devices",
           {{"requests", json::array({{{"name", request}, {"exactly", exactly}}})}}}}}}}};
  testing::ProcessResult r = cluster->Kubectl({"apply", "-f", "-"}, claim_template.dump());
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// The taints of the node's slice, by device: "key=value:effect".
std::map<std::string, std::string> SliceTaints(const json& slices) {
  std::map<std::string, std::string> taints;
  for (const json& slice : slices.value("items", json::array())) {
    for (const json& device : slice["spec"].value("devices", json::array())) {
      for (const json& taint : device.value("taints", json::array())) {
        taints[device["name"]] = taint["key"].get<std::string>() + "=" + taint.value("value", "") +
                                 ":" + taint["effect"].get<std::string>();
      }
    }
  }
  return taints;
}

TEST(DraPluginOnTheRealKubelet, TheSchedulerAllocatesFromItsSliceAndTheKubeletPreparesThroughIt) {
  REQUIRE_NODE();
  std::string kubeconfig = StartDraTest();
  ASSERT_FALSE(kubeconfig.empty());
  testing::TempDir dir("gpunode-dra-node");
  DraPlugin plugin(dir, "dgx-h100", kubeconfig);
  ASSERT_TRUE(plugin.WaitForLog("registered with the kubelet as DRA driver gpu.nvidia.com"))
      << plugin.Log();

  // The node's slice, accepted by the real API server's validation: eight GPUs by NVIDIA's names.
  json slices = AwaitState(
      NodeSlices, [](const json& s) { return s.value("items", json::array()).size() == 1; },
      seconds(30));
  ASSERT_EQ(slices.value("items", json::array()).size(), 1u) << slices.dump() << plugin.Log();
  const json& slice = slices["items"][0];
  EXPECT_EQ(slice["spec"]["driver"], "gpu.nvidia.com");
  EXPECT_EQ(slice["spec"]["pool"]["name"], cluster->node_name());
  EXPECT_EQ(slice["metadata"]["ownerReferences"][0]["kind"], "Node");
  ASSERT_EQ(slice["spec"]["devices"].size(), 8u);
  EXPECT_EQ(slice["spec"]["devices"][0]["name"], "gpu-0");
  EXPECT_EQ(slice["spec"]["devices"][0]["attributes"]["productName"]["string"],
            "NVIDIA H100 80GB HBM3");

  // A claim template as NVIDIA's DRA documentation writes them: the class and a CEL selector.
  for (const auto& [name, count] : {std::pair{"one-h100", 1}, std::pair{"two-gpus", 2}}) {
    ApplyClaimTemplate(name, "gpu",
                       {{"deviceClassName", "gpu.nvidia.com"},
                        {"count", count},
                        {"selectors",
                         {{{"cel",
                            {{"expression",
                              "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA "
                              "H100') && device.capacity['gpu.nvidia.com'].memory.compareTo("
                              "quantity('40Gi')) >= 0"}}}}}}});
  }
  testing::ProcessResult r;

  CreateClaimPod("dra-one", "one-h100");
  json one = ClaimOf("dra-one");
  std::set<std::string> first = AllocatedDevices(one);
  ASSERT_EQ(first.size(), 1u) << one.dump();
  std::string uid = one["metadata"]["uid"];
  // Prepared through the plugin: its CDI spec names the device as NVIDIA's driver does.
  std::ifstream spec_file(plugin.SpecPath(uid));
  json spec = json::parse(spec_file, nullptr, false);
  ASSERT_FALSE(spec.is_discarded()) << plugin.Log();
  EXPECT_EQ(spec["kind"], "k8s.gpu.nvidia.com/claim");
  EXPECT_EQ(spec["devices"][0]["name"], uid + "-" + *first.begin());
  EXPECT_THAT(plugin.Log(),
              HasSubstr("claim default/" + one["metadata"]["name"].get<std::string>()));
  // doctor reads the same: the plugin answers, its slice is NVML's devices, the claim's spec valid.
  std::map<std::string, json> doctor = plugin.Doctor("dgx-h100");
  for (const char* id : {"dra.registration", "dra.device-plugin-beside", "dra.slice", "dra.claims"})
    EXPECT_EQ(doctor[id]["status"], "ok") << doctor[id].dump();

  CreateClaimPod("dra-two", "two-gpus");
  std::set<std::string> second = AllocatedDevices(ClaimOf("dra-two"));
  ASSERT_EQ(second.size(), 2u);
  EXPECT_FALSE(second.contains(*first.begin())) << "a device allocated twice";

  // An unchanged nvidia.com/gpu pod (KEP-5004): the DeviceClass's extendedResourceName makes the
  // scheduler allocate one of our devices to a claim it makes for the pod, and the kubelet
  // prepares that claim through the plugin, as it does a pod's own.
  CreateGpuPod("legacy-gpu", 1);
  json legacy = Get({"pod", "legacy-gpu"});
  ASSERT_TRUE(legacy["status"].contains("extendedResourceClaimStatus")) << legacy["status"].dump();
  json special =
      Get({"resourceclaim", legacy["status"]["extendedResourceClaimStatus"]["resourceClaimName"]});
  std::set<std::string> mapped = AllocatedDevices(special);
  ASSERT_EQ(mapped.size(), 1u) << special.dump();
  EXPECT_FALSE(first.contains(*mapped.begin()) || second.contains(*mapped.begin()))
      << "a device allocated twice";
  EXPECT_TRUE(std::filesystem::exists(plugin.SpecPath(special["metadata"]["uid"]))) << plugin.Log();
  DeletePod("legacy-gpu");

  // The pod's end unprepares its claim: the spec goes.
  DeletePod("dra-one");
  bool removed = AwaitState([&] { return json(std::filesystem::exists(plugin.SpecPath(uid))); },
                            [](const json& exists) { return !exists.get<bool>(); }, seconds(30))
                     .get<bool>() == false;
  EXPECT_TRUE(removed) << plugin.Log();
  DeletePod("dra-two");
}

TEST(DraPluginOnTheRealKubelet, AMigClaimIsPreparedAndTheExporterAttributesItToThePod) {
  REQUIRE_NODE();
  std::string kubeconfig = StartDraTest();
  ASSERT_FALSE(kubeconfig.empty());
  testing::TempDir dir("gpunode-dra-mig");
  // With NVIDIA's switch for the health checks off: nothing is watched, nothing tainted.
  DraPlugin plugin(dir, "a100-mig", kubeconfig, {}, {"DP_DISABLE_HEALTHCHECKS=all"});
  ASSERT_TRUE(plugin.WaitForLog("registered with the kubelet as DRA driver gpu.nvidia.com"))
      << plugin.Log();
  // NVIDIA's MIG class and a selector on the profile, as its documentation writes them.
  ApplyClaimTemplate(
      "half-a100", "mig",
      {{"deviceClassName", "mig.nvidia.com"},
       {"selectors",
        {{{"cel",
           {{"expression", "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"}}}}}}});
  testing::ProcessResult r;
  CreateClaimPod("dra-mig", "half-a100");
  json claim = ClaimOf("dra-mig");
  EXPECT_EQ(AllocatedDevices(claim), std::set<std::string>{"gpu-1-mig-3g40gb-9-4"}) << claim.dump();
  std::string uid = claim["metadata"]["uid"];
  EXPECT_TRUE(std::filesystem::exists(plugin.SpecPath(uid))) << plugin.Log();

  // The exporter finds the pod's MIG device through the real kubelet's dynamic_resources.
  r = Gpunode({"--sim", "a100-mig", "exporter", "--once", "--kubernetes-enable-dra",
               "--pod-resources-socket", cluster->pod_resources_socket()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> attributed;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("DCGM_FI_DEV_FB_USED{", 0) == 0 &&
        line.find("pod=\"dra-mig\"") != std::string::npos) {
      attributed.push_back(line);
    }
  }
  ASSERT_EQ(attributed.size(), 1u) << r.out;
  for (const std::string& label : std::vector<std::string>{
           "GPU_I_PROFILE=\"3g.40gb\"", "namespace=\"default\"",
           "dra_claim_name=\"" + claim["metadata"]["name"].get<std::string>() + "\"",
           std::string("dra_device_name=\"gpu-1-mig-3g40gb-9-4\""),
           std::string("dra_driver_name=\"gpu.nvidia.com\""),
           std::string("dra_mig_profile=\"3g.40gb\""),
           "dra_pool_name=\"" + cluster->node_name() + "\""}) {
    EXPECT_THAT(attributed[0], HasSubstr(label));
  }
  // Said once, though the devices were read again every second (--rescan-interval 1s).
  std::string log = plugin.Log();
  const std::string off = "health checks are disabled";
  ASSERT_NE(log.find(off), std::string::npos) << log;
  EXPECT_EQ(log.find(off, log.find(off) + 1), std::string::npos) << log;
  EXPECT_TRUE(SliceTaints(NodeSlices()).empty());
  DeletePod("dra-mig");
}

TEST(DraPluginOnTheRealKubelet, AKilledPluginsClaimsArePreparedAndUnpreparedByTheNextOne) {
  REQUIRE_NODE();
  std::string kubeconfig = StartDraTest();
  ASSERT_FALSE(kubeconfig.empty());
  testing::TempDir dir("gpunode-dra-restart");
  ApplyClaimTemplate("any-gpu", "gpu", {{"deviceClassName", "gpu.nvidia.com"}});
  testing::ProcessResult r;

  auto plugin = std::make_unique<DraPlugin>(dir, "dgx-h100", kubeconfig);
  ASSERT_TRUE(plugin->WaitForLog("registered with the kubelet")) << plugin->Log();
  CreateClaimPod("dra-before", "any-gpu");
  std::string before_uid = ClaimOf("dra-before")["metadata"]["uid"];
  ASSERT_TRUE(std::filesystem::exists(plugin->SpecPath(before_uid))) << plugin->Log();

  // Killed: a pod made now cannot start, its claim's preparation fails at the kubelet.
  plugin->Kill();
  json pod = LocalPod("dra-after", json::object());
  pod["spec"]["containers"][0]["resources"] = {{"claims", {{{"name", "gpu"}}}}};
  pod["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimTemplateName", "any-gpu"}}};
  r = cluster->Kubectl({"create", "-f", "-"}, pod.dump());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json events = AwaitState(
      [] {
        return Get({"events", "--field-selector", "involvedObject.name=dra-after"});
      },
      [](const json& e) {
        for (const json& event : e.value("items", json::array())) {
          if (event.value("type", "") == "Warning") return true;
        }
        return false;
      },
      seconds(60));
  EXPECT_NE(Get({"pod", "dra-after"})["status"].value("phase", ""), "Running") << events.dump();

  // The next plugin, from the same checkpoint: the kubelet's retry prepares the waiting claim...
  plugin = std::make_unique<DraPlugin>(dir, "dgx-h100", kubeconfig);
  r = cluster->Kubectl({"wait", "--for=condition=Ready", "pod/dra-after", "--timeout=90s"});
  ASSERT_EQ(r.exit_code, 0) << r.err << plugin->Log();
  std::string after_uid = ClaimOf("dra-after")["metadata"]["uid"];
  EXPECT_TRUE(std::filesystem::exists(plugin->SpecPath(after_uid)));
  EXPECT_NE(AllocatedDevices(ClaimOf("dra-after")), AllocatedDevices(ClaimOf("dra-before")));
  // ...and the claim the killed one prepared is unprepared when its pod goes.
  DeletePod("dra-before");
  bool removed =
      AwaitState([&] { return json(std::filesystem::exists(plugin->SpecPath(before_uid))); },
                 [](const json& exists) { return !exists.get<bool>(); }, seconds(30))
          .get<bool>() == false;
  EXPECT_TRUE(removed) << plugin->Log();
  DeletePod("dra-after");
}

TEST(DraPluginOnTheRealKubelet, AnXidTaintsTheDeviceUntilItRecoversAndThePodStatusShowsIt) {
  REQUIRE_NODE();
  std::string kubeconfig = StartDraTest();
  ASSERT_FALSE(kubeconfig.empty());
  testing::TempDir dir("gpunode-dra-health");
  ApplyClaimTemplate("every-gpu", "gpu", {{"deviceClassName", "gpu.nvidia.com"}, {"count", 8}});
  testing::ProcessResult r;

  {
    // XID 62 on GPU 2 a second after start; the GPU answers NVML all along, so the taint lifts
    // once that has held for the recovery period.
    std::string profile =
        WriteProfile(dir, "timeline:\n  - {at: 1s, gpu: 2, event: xid, xid: 62}\n");
    DraPlugin plugin(dir, profile, kubeconfig, {"--health-recovery-period", "15s"});
    json slices = AwaitState(
        NodeSlices, [](const json& s) { return SliceTaints(s).contains("gpu-2"); }, seconds(30));
    EXPECT_EQ(SliceTaints(slices)["gpu-2"], "gpu.nvidia.com/xid=62:NoSchedule")
        << slices.dump() << plugin.Log();
    EXPECT_EQ(SliceTaints(slices).size(), 1u) << slices.dump();
    json doctor_slice = plugin.Doctor(profile)["dra.slice"];
    EXPECT_EQ(doctor_slice["status"], "warn") << doctor_slice.dump();
    EXPECT_THAT(doctor_slice["evidence"].get<std::string>(),
                HasSubstr("gpu-2: gpu.nvidia.com/xid=62:NoSchedule"));

    // A pod that needs all eight GPUs cannot be placed while one is tainted...
    json pod = LocalPod("dra-all", json::object());
    pod["spec"]["containers"][0]["resources"] = {{"claims", {{{"name", "gpu"}}}}};
    pod["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimTemplateName", "every-gpu"}}};
    r = cluster->Kubectl({"create", "-f", "-"}, pod.dump());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json events = AwaitState(
        [] {
          return Get({"events", "--field-selector",
                      "involvedObject.name=dra-all,reason=FailedScheduling"});
        },
        [](const json& e) { return !e.value("items", json::array()).empty(); }, seconds(30));
    ASSERT_FALSE(events.value("items", json::array()).empty()) << Get({"pod", "dra-all"}).dump();
    EXPECT_FALSE(Get({"pod", "dra-all"})["spec"].contains("nodeName"));

    // ...and is placed once the GPU has shown it recovered: the plugin lifts the taint itself.
    slices = AwaitState(
        NodeSlices, [](const json& s) { return SliceTaints(s).empty(); }, seconds(60));
    EXPECT_TRUE(SliceTaints(slices).empty()) << slices.dump() << plugin.Log();
    EXPECT_THAT(plugin.Log(), HasSubstr("is Healthy again"));
    r = cluster->Kubectl({"wait", "--for=condition=Ready", "pod/dra-all", "--timeout=60s"});
    ASSERT_EQ(r.exit_code, 0) << r.err << Get({"pod", "dra-all"})["status"].dump();
  }

  // The plugin again, now with XID 48 on GPU 5 under the running pod: the kubelet shows the
  // device Unhealthy in the pod's status, with the plugin's words (KEP-4680).
  std::string profile = WriteProfile(dir, "timeline:\n  - {at: 1s, gpu: 5, event: xid, xid: 48}\n");
  DraPlugin plugin(dir, profile, kubeconfig, {"--health-recovery-period", "0"});
  auto health_of = [](const json& pod) {
    std::map<std::string, std::pair<std::string, std::string>> health;  // id -> health, message
    for (const json& status : pod["status"].value("containerStatuses", json::array())) {
      for (const json& resource : status.value("allocatedResourcesStatus", json::array())) {
        for (const json& device : resource.value("resources", json::array())) {
          health[device["resourceID"]] = {device.value("health", ""), device.value("message", "")};
        }
      }
    }
    return health;
  };
  std::string uid = ClaimOf("dra-all")["metadata"]["uid"];
  std::string gpu5 = "k8s.gpu.nvidia.com/claim=" + uid + "-gpu-5";
  json running = AwaitState(
      [] {
        return Get({"pod", "dra-all"});
      },
      [&](const json& p) { return health_of(p)[gpu5].first == "Unhealthy"; }, seconds(60));
  auto health = health_of(running);
  EXPECT_EQ(health[gpu5].first, "Unhealthy") << running["status"].dump() << plugin.Log();
  EXPECT_THAT(health[gpu5].second, HasSubstr("XID 48"));
  EXPECT_EQ(health["k8s.gpu.nvidia.com/claim=" + uid + "-gpu-0"].first, "Healthy")
      << running["status"].dump();
  EXPECT_EQ(SliceTaints(NodeSlices())["gpu-5"], "gpu.nvidia.com/xid=48:NoSchedule");
  DeletePod("dra-all");
}

// MPS through a claim as NVIDIA's DRA documentation writes it: the plugin starts the claim's own
// control daemon in a Deployment (the real controller-manager makes its pod, the real kubelet runs
// gpunode's image with NVIDIA's nvidia-cuda-mps-control from the driver root), the claim's CDI
// spec gives its devices the daemon's pipe and tmpfs, and the pod's end stops the daemon.
TEST(DraPluginOnTheRealKubelet, AnMpsClaimGetsADaemonOfItsOwnAndItsSpecThePipe) {
  REQUIRE_NODE();
  const std::string deb = testing::NvidiaDeb("nvidia-cuda-mps");
  if (deb.empty()) {
    GTEST_SKIP() << "no nvidia-cuda-mps .deb in " << testing::kNvidiaDebCache
                 << " (scripts/install-deps.sh fetches it)";
  }
  std::string kubeconfig = StartDraTest();
  ASSERT_FALSE(kubeconfig.empty());
  testing::TempDir dir("gpunode-dra-mps");
  const std::string driver = DriverRootFor(dir, "dgx-h100");
  testing::ProcessResult extracted = testing::RunProcess({"/usr/bin/dpkg-deb", "-x", deb, driver});
  ASSERT_EQ(extracted.exit_code, 0) << extracted.err;
  const std::string mps_dir = cluster->kubelet_root() + "/plugins/gpu.nvidia.com/mps";
  ASSERT_TRUE(cluster->ShareMount(mps_dir)) << cluster->error();
  DraPlugin plugin(dir, "dgx-h100", kubeconfig,
                   {"--image-name", testing::LocalCluster::kGpunodeImage});
  ASSERT_TRUE(plugin.WaitForLog("registered with the kubelet as DRA driver gpu.nvidia.com"))
      << plugin.Log();

  json mps = {
      {"apiVersion", "resource.nvidia.com/v1beta1"},
      {"kind", "GpuConfig"},
      {"sharing",
       {{"strategy", "MPS"},
        {"mpsConfig",
         {{"defaultActiveThreadPercentage", 50}, {"defaultPinnedDeviceMemoryLimit", "10Gi"}}}}}};
  json claim_template = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaimTemplate"},
      {"metadata", {{"name", "mps-two"}, {"namespace", "default"}}},
      {"spec",
       {{"spec",
         {{"devices",
           {{"requests",
             json::array({{{"name", "gpu"},
                           {"exactly", {{"deviceClassName", "gpu.nvidia.com"}, {"count", 2}}}}})},
            {"config",
             json::array(
                 {{{"requests", {"gpu"}},
                   {"opaque", {{"driver", "gpu.nvidia.com"}, {"parameters", mps}}}}})}}}}}}}};
  testing::ProcessResult r = cluster->Kubectl({"apply", "-f", "-"}, claim_template.dump());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // What the daemons said, for a failure's message.
  auto daemon_logs = [] {
    std::string logs;
    for (const char* previous : {"--previous=true", "--previous=false"}) {
      logs += cluster
                  ->Kubectl({"logs", "-n", "gpunode-system", "-l",
                             "app.kubernetes.io/name=gpunode-mps-control-daemon", "--tail=40",
                             previous})
                  .out;
    }
    return logs;
  };
  CreateClaimPod("dra-mps", "mps-two");
  if (HasFailure()) {
    ADD_FAILURE() << "the MPS daemons' log:\n"
                  << daemon_logs()
                  << testing::RunProcess({"/bin/sh", "-c", "cat " + mps_dir + "/*/log/*"}).out;
  }
  json claim = ClaimOf("dra-mps");
  ASSERT_EQ(AllocatedDevices(claim).size(), 2u) << claim.dump();
  const std::string uid = claim["metadata"]["uid"];
  const std::string id = uid + "-0";
  // The daemon's directory is named by the UID's last group (docs/DRA.md, "MPS").
  const std::string root = mps_dir + "/" + uid.substr(uid.rfind('-') + 1) + "-0";

  json deployment = Get({"deployment", "-n", "gpunode-system", "mps-control-daemon-" + id});
  EXPECT_EQ(deployment["spec"]["template"]["spec"]["nodeName"], cluster->node_name())
      << deployment.dump() << plugin.Log();
  // The daemon answers NVIDIA's own client on the claim's pipe, with the claim's limits.
  auto ask = [&](const std::string& command) {
    return testing::RunProcess({"/bin/sh", "-c",
                                "echo '" + command + "' | CUDA_MPS_PIPE_DIRECTORY=" + root +
                                    "/pipe " + driver + "/usr/bin/nvidia-cuda-mps-control"})
        .out;
  };
  EXPECT_THAT(ask("get_default_active_thread_percentage"), HasSubstr("50")) << daemon_logs();
  EXPECT_THAT(ask("get_default_device_pinned_mem_limit 1"), HasSubstr("10G"));
  // The claim's CDI spec makes the pod's containers that daemon's clients. (The node's containerd,
  // Debian's 1.6, does not apply CDI devices from the CRI, so the spec is checked where a runtime
  // reads it, as for the claims above.)
  std::ifstream spec_file(plugin.SpecPath(uid));
  json spec = json::parse(spec_file, nullptr, false);
  ASSERT_FALSE(spec.is_discarded()) << plugin.Log();
  ASSERT_EQ(spec["devices"].size(), 2u);
  for (const json& device : spec["devices"]) {
    const json& edits = device["containerEdits"];
    EXPECT_THAT(edits["env"], ::testing::Contains("CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps"));
    std::map<std::string, std::string> mounted;
    for (const json& mount : edits["mounts"]) mounted[mount["containerPath"]] = mount["hostPath"];
    EXPECT_EQ(mounted["/tmp/nvidia-mps"], root + "/pipe");
    EXPECT_EQ(mounted["/dev/shm"], root + "/shm");
  }

  // The pod's end unprepares the claim: the daemon's Deployment goes, the daemon quits, its files
  // go with it.
  DeletePod("dra-mps");
  json gone = AwaitState([&] { return json(std::filesystem::exists(root)); },
                         [](const json& exists) { return !exists.get<bool>(); }, seconds(60));
  EXPECT_FALSE(gone.get<bool>()) << plugin.Log();
  r = cluster->Kubectl({"get", "deployment", "-n", "gpunode-system", "mps-control-daemon-" + id});
  EXPECT_NE(r.exit_code, 0) << r.out;
}

TEST(DraPluginOnTheRealKubelet, RefusesToStartBesideADevicePlugin) {
  REQUIRE_NODE();
  testing::TempDir dir("gpunode-dra-node");
  Plugin device_plugin("dgx-h100", {});
  ASSERT_TRUE(AwaitAllocatable({{"nvidia.com/gpu", "8"}})) << device_plugin.Log();
  testing::ProcessResult r = testing::RunProcess(
      {build_paths::kBinary, "--log-level", "warn", "--sim", "dgx-h100", "dra-plugin",
       "--kubelet-dir", cluster->kubelet_root(), "--cdi-root", dir.path() + "/cdi",
       "--nvidia-driver-root", DriverRootFor(dir, "dgx-h100")},
      {"KUBECONFIG=" + cluster->admin_kubeconfig(), "NODE_NAME=" + cluster->node_name()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("a device plugin serves on " + cluster->device_plugin_dir()));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace gpunode
