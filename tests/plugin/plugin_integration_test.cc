// `gpunode device-plugin` as the kubelet meets it: the real binary on simulated nodes, against a
// kubelet double that registers, streams and allocates as the kubelet does. Every wait is for an
// event (a registration, a ListAndWatch update, an exit), never a fixed sleep.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubelet_double.h"
#include "log_time.h"
#include "nlohmann/json.hpp"
#include "process.h"

namespace gpunode {
namespace {

using testing::DeviceState;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;
using json = nlohmann::json;
namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr milliseconds kWait{15000};  // generous for sanitizer builds; events end waits early

// How many times slower than the release build the binary under test runs: scripts/test.sh sets
// GPUNODE_TEST_TIME_SCALE for its ThreadSanitizer step, which slows code 5-15 times. Only bounds on
// the binary's own speed widen with it; waits for events need no scaling.
int TimeScale() {
  const char* text = std::getenv("GPUNODE_TEST_TIME_SCALE");
  long scale = text == nullptr ? 1 : std::strtol(text, nullptr, 10);
  return scale >= 1 && scale <= 100 ? static_cast<int>(scale) : 1;
}

std::string Fixture(const std::string& relative) {
  return std::string(build_paths::kFixturesDir) + "/plugin/" + relative;
}

json Inventory(const std::string& sim) {
  testing::ProcessResult r =
      testing::RunProcess({build_paths::kBinary, "--sim", sim, "inventory", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

std::vector<std::string> Uuids(const json& inventory) {
  std::vector<std::string> uuids;
  for (const json& gpu : inventory["gpus"]) uuids.push_back(gpu["uuid"]);
  return uuids;
}

testing::DevicePredicate AllHealthy(size_t count) {
  return [count](const std::vector<DeviceState>& devices) {
    return devices.size() == count && std::all_of(devices.begin(), devices.end(),
                                                  [](auto& d) { return d.health == "Healthy"; });
  };
}

// Exactly the devices whose ID starts with one of `prefixes` are Unhealthy, and each prefix
// names at least one device.
testing::DevicePredicate OnlyUnhealthy(std::vector<std::string> prefixes) {
  return [prefixes](const std::vector<DeviceState>& devices) {
    std::set<std::string> seen;
    for (const DeviceState& d : devices) {
      bool listed = false;
      for (const std::string& p : prefixes) {
        if (d.id.rfind(p, 0) == 0) {
          listed = true;
          seen.insert(p);
        }
      }
      if ((d.health == "Unhealthy") != listed) return false;
    }
    return seen.size() == prefixes.size();
  };
}

// As the kubelet updates a ConfigMap volume mounted at `dir` with the keys "none" and "ts4": a new
// timestamped directory, then ..data re-pointed by rename, the keys being links through ..data.
void PublishConfigMap(const std::string& dir, const std::string& version, const std::string& ts4) {
  fs::create_directories(dir + "/" + version);
  std::ofstream(dir + "/" + version + "/none") << "version: v1\n";
  std::ofstream(dir + "/" + version + "/ts4") << ts4;
  fs::create_directory_symlink(version, dir + "/..data_tmp");
  fs::rename(dir + "/..data_tmp", dir + "/..data");
  for (const char* key : {"none", "ts4"}) {
    if (!fs::is_symlink(dir + "/" + key)) {
      fs::create_symlink(std::string("..data/") + key, dir + "/" + key);
    }
  }
}

std::string TimeSlicing(int replicas) {
  return "sharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: " +
         std::to_string(replicas) + "}\n";
}

using Clock = std::chrono::system_clock;

class DevicePluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpunode-dp-XXXXXX";  // unix socket paths must stay short
    ASSERT_NE(mkdtemp(pattern), nullptr);
    // The kubelet's layout, so that doctor --kubelet-root-dir finds the device-plugins directory.
    root_ = pattern;
    dir_ = root_ + "/device-plugins";
    ASSERT_TRUE(fs::create_directory(dir_));
    kubelet_ = std::make_unique<testing::KubeletDouble>(dir_);
    ASSERT_TRUE(kubelet_->Start());
  }
  void TearDown() override {
    plugin_.reset();
    kubelet_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  testing::BackgroundProcess& Start(const std::string& sim, const std::vector<std::string>& args,
                                    const std::vector<std::string>& env = {},
                                    const std::vector<std::string>& global = {}) {
    std::vector<std::string> argv = {build_paths::kBinary, "--sim", sim, "--log-level", "info"};
    argv.insert(argv.end(), global.begin(), global.end());
    argv.insert(argv.end(), {"device-plugin", "--kubelet-dir", dir_, "--cdi-spec-dir", dir_});
    argv.insert(argv.end(), args.begin(), args.end());
    plugin_ = std::make_unique<testing::BackgroundProcess>(
        argv, testing::BackgroundProcess::Options{.extra_env = env,
                                                  .stderr_path = root_ + "/plugin.log"});
    return *plugin_;
  }

  testing::RegisteredPlugin Registered(const std::string& resource, int count = 1) {
    std::optional<testing::RegisteredPlugin> r =
        kubelet_->WaitForRegistration(resource, count, kWait);
    EXPECT_TRUE(r.has_value()) << resource << " did not register; log:\n" << plugin_->Log();
    return r.value_or(testing::RegisteredPlugin{});
  }

  testing::DeviceUpdate Await(const std::string& resource, const testing::DevicePredicate& p,
                              size_t from = 0, size_t* index = nullptr) {
    auto update = kubelet_->WaitForDevices(resource, p, kWait, from);
    EXPECT_TRUE(update.has_value()) << "no such ListAndWatch update for " << resource << "; log:\n"
                                    << plugin_->Log();
    if (!update) return {};
    if (index != nullptr) *index = update->first;
    return update->second;
  }

  std::string root_;
  std::string dir_;  // root_/device-plugins
  std::unique_ptr<testing::KubeletDouble> kubelet_;
  std::unique_ptr<testing::BackgroundProcess> plugin_;
};

// A DaemonSet can start before the kubelet has made its directory or its socket: the plugin
// waits for both, says so at info, and registers once the kubelet is there.
TEST_F(DevicePluginTest, WaitsForTheKubeletsDirectoryAndSocketAndSaysSo) {
  kubelet_.reset();
  fs::remove_all(dir_);
  Start("a10-pcie-4", {});
  EXPECT_TRUE(plugin_->WaitForLog(
      "waiting for the kubelet's device-plugins directory: cannot watch " + dir_, kWait))
      << plugin_->Log();
  ASSERT_TRUE(fs::create_directory(dir_));
  EXPECT_TRUE(plugin_->WaitForLog(dir_ + " is there: starting the plugins", kWait))
      << plugin_->Log();
  EXPECT_TRUE(plugin_->WaitForLog(
      "waiting for the kubelet at " + dir_ + "/kubelet.sock: no socket there yet (or not a socket)",
      kWait))
      << plugin_->Log();
  kubelet_ = std::make_unique<testing::KubeletDouble>(dir_);
  ASSERT_TRUE(kubelet_->Start());
  Registered("nvidia.com/gpu");
  EXPECT_THAT(plugin_->Log(), HasSubstr("registering nvidia.com/gpu with the kubelet at " + dir_ +
                                        "/kubelet.sock"));
  EXPECT_EQ(plugin_->Stop(SIGTERM), 0) << plugin_->Log();
}

TEST_F(DevicePluginTest, RegistersEightHealthyH100sWithTheirNumaNodes) {
  std::vector<std::string> uuids = Uuids(Inventory("dgx-h100"));
  Start("dgx-h100", {});
  testing::RegisteredPlugin reg = Registered("nvidia.com/gpu");
  EXPECT_EQ(reg.version, "v1beta1");
  EXPECT_EQ(reg.endpoint, "nvidia-gpu.sock");
  EXPECT_TRUE(reg.options.get_preferred_allocation_available());
  EXPECT_FALSE(reg.options.pre_start_required());
  testing::DeviceUpdate update = Await("nvidia.com/gpu", AllHealthy(8));
  ASSERT_EQ(update.devices.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(update.devices[i].id, uuids[i]);
    EXPECT_THAT(update.devices[i].numa_nodes, ElementsAre(i < 4 ? 0 : 1));
  }
  EXPECT_TRUE(kubelet_->RefusedRegistrations().empty());
  // The health state is written from the start, so that doctor can tell gpunode's plugin watches
  // the GPUs while all stay healthy.
  const std::string state = dir_ + "/gpunode-health.json";
  auto deadline = std::chrono::steady_clock::now() + kWait;
  while (!fs::exists(state) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  json written = json::parse(std::ifstream(state), nullptr, false);
  EXPECT_EQ(written, json::parse(R"({"unhealthy": []})")) << written.dump();
}

TEST_F(DevicePluginTest, AllocateOnePerContainerReturnsTheUuids) {
  std::vector<std::string> uuids = Uuids(Inventory("dgx-h100"));
  Start("dgx-h100", {});
  Registered("nvidia.com/gpu");
  std::vector<v1beta1::ContainerAllocateResponse> responses;
  grpc::Status st =
      kubelet_->Allocate("nvidia.com/gpu", {{uuids[2], uuids[5]}, {uuids[7]}}, &responses);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(responses.size(), 2u);
  EXPECT_THAT(responses[0].envs(),
              UnorderedElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", uuids[2] + "," + uuids[5])));
  EXPECT_THAT(responses[1].envs(), UnorderedElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", uuids[7])));
  EXPECT_EQ(responses[0].devices_size(), 0);  // passDeviceSpecs is off by default

  // A bad ID is an error for that request; the plugin keeps serving.
  st = kubelet_->Allocate("nvidia.com/gpu", {{"GPU-not-here"}}, &responses);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("unknown device: GPU-not-here"));
  st = kubelet_->Allocate("nvidia.com/gpu", {{uuids[0]}}, &responses);
  EXPECT_TRUE(st.ok()) << st.error_message();
}

TEST_F(DevicePluginTest, IndexStrategyVolumeMountsAndDeviceSpecsFromEnvironment) {
  std::vector<std::string> uuids = Uuids(Inventory("dgx-h100"));
  Start(
      "dgx-h100", {},
      {"DEVICE_ID_STRATEGY=index", "DEVICE_LIST_STRATEGY=volume-mounts", "PASS_DEVICE_SPECS=true"},
      {"--host-root", Fixture("host")});
  Registered("nvidia.com/gpu");
  std::vector<v1beta1::ContainerAllocateResponse> responses;
  grpc::Status st = kubelet_->Allocate("nvidia.com/gpu", {{uuids[1], uuids[3]}}, &responses);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const v1beta1::ContainerAllocateResponse& r = responses[0];
  EXPECT_THAT(r.envs(), UnorderedElementsAre(
                            Pair("NVIDIA_VISIBLE_DEVICES", "/var/run/nvidia-container-devices")));
  ASSERT_EQ(r.mounts_size(), 2);
  EXPECT_EQ(r.mounts(0).container_path(), "/var/run/nvidia-container-devices/1");
  EXPECT_EQ(r.mounts(1).container_path(), "/var/run/nvidia-container-devices/3");
  std::vector<std::string> specs;
  for (const v1beta1::DeviceSpec& spec : r.devices()) specs.push_back(spec.container_path());
  // nvidia-modeset is not in the fixture host: only present control devices are passed.
  EXPECT_THAT(specs, ElementsAre("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                 "/dev/nvidia1", "/dev/nvidia3"));
}

TEST_F(DevicePluginTest, CdiStrategiesAndTheSpecFile) {
  std::vector<std::string> uuids = Uuids(Inventory("dgx-h100"));
  // The simulator reports driver 550.90.07: a driver root with its two indispensable libraries.
  std::string driver = dir_ + "/driver";
  fs::create_directories(driver + "/usr/lib/x86_64-linux-gnu");
  for (const char* lib : {"libcuda.so.550.90.07", "libnvidia-ml.so.550.90.07"})
    std::ofstream(driver + "/usr/lib/x86_64-linux-gnu/" + lib) << "ELF";
  Start("dgx-h100", {"--device-list-strategy", "cdi-annotations,cdi-cri", "--nvidia-driver-root",
                     driver, "--dev-root", "/"});
  Registered("nvidia.com/gpu");
  std::vector<v1beta1::ContainerAllocateResponse> responses;
  ASSERT_TRUE(kubelet_->Allocate("nvidia.com/gpu", {{uuids[4]}}, &responses).ok());
  ASSERT_EQ(responses[0].cdi_devices_size(), 1);
  EXPECT_EQ(responses[0].cdi_devices(0).name(), "k8s.device-plugin.nvidia.com/gpu=" + uuids[4]);
  ASSERT_EQ(responses[0].annotations_size(), 1);
  EXPECT_THAT(responses[0].annotations().begin()->first,
              StartsWith("cdi.k8s.io/nvidia-device-plugin_"));
  std::ifstream in(dir_ + "/k8s.device-plugin.nvidia.com-gpu.json");
  ASSERT_TRUE(in.good());
  json spec = json::parse(in);
  EXPECT_EQ(spec["kind"], "k8s.device-plugin.nvidia.com/gpu");
  std::set<std::string> names;
  for (const json& d : spec["devices"]) names.insert(d["name"]);
  EXPECT_TRUE(names.contains(uuids[4]) && names.contains("4") && names.contains("all"));
  // The same generator as `gpunode cdi generate`: the driver's libraries are mounted.
  std::set<std::string> mounts;
  for (const json& m : spec["containerEdits"]["mounts"]) mounts.insert(m["containerPath"]);
  EXPECT_EQ(mounts, (std::set<std::string>{"/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07",
                                           "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.90.07",
                                           "/var/run/nvidia-container-devices/void"}));
  testing::ProcessResult valid = testing::RunProcess(
      {build_paths::kBinary, "cdi", "validate", dir_ + "/k8s.device-plugin.nvidia.com-gpu.json"});
  EXPECT_EQ(valid.exit_code, 0) << valid.err;
}

TEST_F(DevicePluginTest, CdiStrategyWithoutADriverDoesNotStart) {
  Start("dgx-h100", {"--device-list-strategy", "cdi-cri", "--nvidia-driver-root", dir_});
  std::optional<int> code = plugin_->Wait(kWait);
  ASSERT_TRUE(code.has_value()) << plugin_->Log();
  EXPECT_NE(*code, 0);
  EXPECT_THAT(plugin_->Log(), HasSubstr("libcuda.so.550.90.07"));
}

TEST_F(DevicePluginTest, TimeSlicingGivesFourReplicasPerGpu) {
  std::vector<std::string> uuids = Uuids(Inventory("dgx-h100"));
  Start("dgx-h100", {"--config-file", Fixture("time-slicing-4.yaml")});
  Registered("nvidia.com/gpu");
  testing::DeviceUpdate update = Await("nvidia.com/gpu", AllHealthy(32));
  for (size_t i = 0; i < 32; ++i)
    EXPECT_EQ(update.devices[i].id, uuids[i / 4] + "::" + std::to_string(i % 4));
  std::vector<v1beta1::ContainerAllocateResponse> responses;
  ASSERT_TRUE(
      kubelet_->Allocate("nvidia.com/gpu", {{uuids[2] + "::1", uuids[2] + "::3"}}, &responses)
          .ok());
  EXPECT_THAT(responses[0].envs(), UnorderedElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", uuids[2])));
  // Distributed (the default): two replicas come from two GPUs.
  std::vector<std::string> all;
  for (const DeviceState& d : update.devices) all.push_back(d.id);
  std::vector<std::string> ids;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation("nvidia.com/gpu", all, {}, 2, &ids).ok());
  EXPECT_THAT(ids, ElementsAre(uuids[0] + "::0", uuids[1] + "::0"));
}

TEST_F(DevicePluginTest, RenamedStrictTimeSlicing) {
  std::vector<std::string> uuids = Uuids(Inventory("dgx-h100"));
  Start("dgx-h100", {"--config-file", Fixture("time-slicing-strict.yaml")});
  testing::RegisteredPlugin reg = Registered("nvidia.com/gpu.shared");
  EXPECT_EQ(reg.endpoint, "nvidia-gpu.shared.sock");
  Await("nvidia.com/gpu.shared", AllHealthy(16));
  std::vector<v1beta1::ContainerAllocateResponse> responses;
  grpc::Status st = kubelet_->Allocate("nvidia.com/gpu.shared",
                                       {{uuids[0] + "::0", uuids[1] + "::0"}}, &responses);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(),
            "invalid allocation request for \"nvidia.com/gpu.shared\": invalid request: maximum "
            "request size for shared resources is 1; found 2");
}

TEST_F(DevicePluginTest, MigMixedOnA100) {
  Start("a100-mig", {"--mig-strategy", "mixed", "--pass-device-specs"}, {},
        {"--host-root", Fixture("host")});
  const std::map<std::string, size_t> expected = {
      {"nvidia.com/gpu", 2},         {"nvidia.com/mig-1g.10gb", 9},
      {"nvidia.com/mig-2g.20gb", 2}, {"nvidia.com/mig-3g.40gb", 3},
      {"nvidia.com/mig-4g.40gb", 1}, {"nvidia.com/mig-1c.3g.40gb", 2},
      {"nvidia.com/mig-7g.80gb", 1}};
  for (const auto& [resource, count] : expected) {
    testing::RegisteredPlugin reg = Registered(resource);
    EXPECT_EQ(reg.endpoint, "nvidia-" + resource.substr(11) + ".sock");
    testing::DeviceUpdate update = Await(resource, AllHealthy(count));
    if (resource != "nvidia.com/gpu") {
      for (const DeviceState& d : update.devices) EXPECT_THAT(d.id, StartsWith("MIG-"));
    }
  }
  testing::DeviceUpdate mig = Await("nvidia.com/mig-7g.80gb", AllHealthy(1));
  std::vector<v1beta1::ContainerAllocateResponse> responses;
  grpc::Status st = kubelet_->Allocate("nvidia.com/mig-7g.80gb", {{mig.devices[0].id}}, &responses);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_THAT(responses[0].envs(),
              UnorderedElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", mig.devices[0].id)));
  std::vector<std::string> specs;
  for (const v1beta1::DeviceSpec& spec : responses[0].devices()) specs.push_back(spec.host_path());
  ASSERT_EQ(specs.size(), 6u);  // 3 control devices, /dev/nvidia7, GI and CI capabilities
  EXPECT_EQ(specs[3], "/dev/nvidia7");
  EXPECT_THAT(specs[4], StartsWith("/dev/nvidia-caps/nvidia-cap"));
}

TEST_F(DevicePluginTest, MigSingleRefusesAMixedLayout) {
  testing::ProcessResult r =
      testing::RunProcess({build_paths::kBinary, "--sim", "a100-mig", "device-plugin",
                           "--kubelet-dir", dir_, "--mig-strategy", "single"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("migStrategy single: all devices on the node must be configured "
                               "with the same migEnabled value"));
}

// The kubelet's allocator scores as NVIDIA's: 100 per NVLink plus the PCIe path, whose level for
// an NVLink pair is NODE within a socket and SYS across (what the simulator reports).
long PairScore(const json& inventory, size_t a, size_t b) {
  std::string label = inventory["topology"][a][b];
  if (label.rfind("NV", 0) == 0) {
    bool same_numa = inventory["gpus"][a]["numa_node"] == inventory["gpus"][b]["numa_node"];
    return std::stol(label.substr(2)) * 100 + (same_numa ? 20 : 10);
  }
  const std::map<std::string, long> pcie = {
      {"PIX", 50}, {"PXB", 40}, {"PHB", 30}, {"NODE", 20}, {"SYS", 10}};
  return pcie.at(label);
}

long SetScore(const json& inventory, const std::vector<size_t>& set) {
  long total = 0;
  for (size_t i = 0; i < set.size(); ++i)
    for (size_t j = i + 1; j < set.size(); ++j) total += PairScore(inventory, set[i], set[j]);
  return total;
}

// Brute force over every subset of `available` with `size` members that holds `required`.
long BestScore(const json& inventory, const std::vector<size_t>& available,
               const std::vector<size_t>& required, size_t size) {
  long best = -1;
  for (uint32_t mask = 0; mask < (1u << available.size()); ++mask) {
    if (static_cast<size_t>(__builtin_popcount(mask)) != size) continue;
    std::vector<size_t> set;
    for (size_t i = 0; i < available.size(); ++i)
      if (mask & (1u << i)) set.push_back(available[i]);
    if (!std::all_of(required.begin(), required.end(),
                     [&](size_t r) { return std::find(set.begin(), set.end(), r) != set.end(); }))
      continue;
    best = std::max(best, SetScore(inventory, set));
  }
  return best;
}

TEST_F(DevicePluginTest, PreferredAllocationIsOptimalOnDgx1ForEverySize) {
  json inventory = Inventory("dgx1-v100");
  std::vector<std::string> uuids = Uuids(inventory);
  Start("dgx1-v100", {});
  Registered("nvidia.com/gpu");
  auto positions = [&](const std::vector<std::string>& ids) {
    std::vector<size_t> out;
    for (const std::string& id : ids)
      out.push_back(std::find(uuids.begin(), uuids.end(), id) - uuids.begin());
    return out;
  };
  struct Case {
    std::vector<size_t> available, required;
  };
  const std::vector<Case> cases = {{{0, 1, 2, 3, 4, 5, 6, 7}, {}},
                                   {{0, 1, 2, 3, 4, 5, 6, 7}, {5}},
                                   {{1, 2, 4, 5, 6, 7}, {}},
                                   {{0, 2, 3, 4, 6, 7}, {6}}};
  for (const Case& c : cases) {
    std::vector<std::string> available, required;
    for (size_t i : c.available) available.push_back(uuids[i]);
    for (size_t i : c.required) required.push_back(uuids[i]);
    for (size_t size = std::max<size_t>(1, c.required.size()); size <= c.available.size(); ++size) {
      std::vector<std::string> ids;
      grpc::Status st = kubelet_->GetPreferredAllocation("nvidia.com/gpu", available, required,
                                                         static_cast<int>(size), &ids);
      ASSERT_TRUE(st.ok()) << st.error_message();
      std::vector<size_t> got = positions(ids);
      ASSERT_EQ(got.size(), size);
      std::set<size_t> unique(got.begin(), got.end());
      EXPECT_EQ(unique.size(), size);
      for (size_t g : got)
        EXPECT_NE(std::find(c.available.begin(), c.available.end(), g), c.available.end());
      for (size_t r : c.required) EXPECT_TRUE(unique.contains(r));
      EXPECT_EQ(SetScore(inventory, got), BestScore(inventory, c.available, c.required, size))
          << "size " << size << " required " << c.required.size();
    }
  }
}

TEST_F(DevicePluginTest, CriticalXidMakesTheGpuUnhealthyThenItRecovers) {
  // The profile's name seeds its UUIDs: ask the same profile.
  std::vector<std::string> uuids = Uuids(Inventory(Fixture("dgx-h100-xids.yaml")));
  Start(Fixture("dgx-h100-xids.yaml"), {"--health-recovery-period", "1s"});
  Registered("nvidia.com/gpu");
  size_t at = 0;
  testing::DeviceUpdate down = Await("nvidia.com/gpu", OnlyUnhealthy({uuids[3]}), 0, &at);
  // The simulator sends the XID 1.7 s after nvmlInit, which the plugin logs (UTC, milliseconds).
  std::optional<Clock::time_point> init = testing::LogTime(plugin_->Log(), "NVML initialized");
  ASSERT_TRUE(init.has_value()) << plugin_->Log();
  auto update_wall = Clock::now() - (std::chrono::steady_clock::now() - down.at);
  auto latency =
      std::chrono::duration_cast<milliseconds>(update_wall - (*init + milliseconds(1700)));
  RecordProperty("xid_to_unhealthy_ms", static_cast<int>(latency.count()));
  // 2 ms for the log's millisecond truncation, and for the time from nvmlInit to that log line,
  // which is longer (and the latency with it) under ThreadSanitizer.
  EXPECT_LE(latency.count(), (100 + 2) * TimeScale()) << "ListAndWatch carried the XID late";
  EXPECT_GE(latency.count(), -2 * TimeScale());
  Await("nvidia.com/gpu", OnlyUnhealthy({uuids[3], uuids[6]}), at + 1, &at);
  Await("nvidia.com/gpu", AllHealthy(8), at + 1);
  // XID 13 on GPU 1 is the application's fault: GPU 1 was never Unhealthy.
  auto gpu1_down = kubelet_->WaitForDevices(
      "nvidia.com/gpu",
      [&](const std::vector<DeviceState>& devices) { return devices[1].health != "Healthy"; },
      milliseconds(0));
  EXPECT_FALSE(gpu1_down.has_value());
  std::string log = plugin_->Log();
  EXPECT_THAT(log, HasSubstr("XID 79 (GPU has fallen off the bus)"));
  EXPECT_THAT(log, HasSubstr("XID 13 (Graphics Engine Exception; usually the application)"));
  EXPECT_THAT(log, HasSubstr("is Healthy again"));
}

TEST_F(DevicePluginTest, DisabledXidsAreIgnored) {
  std::vector<std::string> uuids = Uuids(Inventory(Fixture("dgx-h100-xids.yaml")));
  Start(Fixture("dgx-h100-xids.yaml"), {"--health-recovery-period", "0"},
        {"DP_DISABLE_HEALTHCHECKS=79"});
  Registered("nvidia.com/gpu");
  // XID 48 on GPU 6 comes after XID 79 on GPU 3: when it shows, the 79 has been seen and ignored.
  Await("nvidia.com/gpu", OnlyUnhealthy({uuids[6]}));
  auto gpu3_down = kubelet_->WaitForDevices(
      "nvidia.com/gpu",
      [&](const std::vector<DeviceState>& devices) { return devices[3].health != "Healthy"; },
      milliseconds(0));
  EXPECT_FALSE(gpu3_down.has_value());
}

TEST_F(DevicePluginTest, LostGpuLeavesTheOtherSevenHealthy) {
  std::vector<std::string> uuids = Uuids(Inventory(Fixture("dgx-h100-lost.yaml")));
  Start(Fixture("dgx-h100-lost.yaml"), {"--health-recovery-period", "500ms"});
  Registered("nvidia.com/gpu");
  size_t at = 0;
  Await("nvidia.com/gpu", OnlyUnhealthy({uuids[5]}), 0, &at);
  // It answers again at 2.5 s; 500 ms later it is back.
  testing::DeviceUpdate up = Await("nvidia.com/gpu", AllHealthy(8), at + 1);
  EXPECT_GE(std::chrono::duration_cast<milliseconds>(up.at - plugin_->started()).count(), 3000);
  // Meanwhile Allocate refuses the lost GPU and serves the others.
  EXPECT_THAT(plugin_->Log(), HasSubstr("the GPU is lost"));
}

// A built-in profile with a timeline of the test's own, written under the test's directory (its
// name, which seeds the UUIDs, stays the built-in's).
std::string ProfileWithTimeline(const std::string& dir, const std::string& builtin,
                                const std::string& timeline) {
  std::ifstream in(std::string(build_paths::kSimProfilesDir) + "/" + builtin + ".yaml");
  std::stringstream text;
  text << in.rdbuf() << "timeline:\n" << timeline;
  std::string path = dir + "/" + builtin + "-timeline.yaml";
  std::ofstream(path) << text.str();
  return path;
}

// How many devices are Unhealthy.
testing::DevicePredicate UnhealthyCount(size_t count) {
  return [count](const std::vector<DeviceState>& devices) {
    return static_cast<size_t>(std::count_if(devices.begin(), devices.end(), [](auto& d) {
             return d.health == "Unhealthy";
           })) == count;
  };
}

TEST_F(DevicePluginTest, MemoryAndNvLinkXidsRecoverOnlyOnEvidence) {
  std::vector<std::string> uuids = Uuids(Inventory("dgx-h100"));
  // GPU 2: a double-bit error whose row remap waits for a reset, which comes at 2.5 s. GPU 4: the
  // remapper fails, so nothing will show the fault gone. GPU 6: an NVLink error, links all up.
  std::string sim = ProfileWithTimeline(root_, "dgx-h100", R"(
  - {at: 1000ms, gpu: 2, event: remap, pending: true, uncorrected: 1}
  - {at: 1000ms, gpu: 2, event: xid, xid: 48}
  - {at: 1000ms, gpu: 4, event: remap, failure: true}
  - {at: 1000ms, gpu: 4, event: xid, xid: 64}
  - {at: 1200ms, gpu: 6, event: xid, xid: 74}
  - {at: 2500ms, gpu: 2, event: remap, pending: false}
)");
  Start(sim, {"--health-recovery-period", "300ms"});
  Registered("nvidia.com/gpu");
  size_t at = 0;
  Await("nvidia.com/gpu", OnlyUnhealthy({uuids[2], uuids[4], uuids[6]}), 0, &at);
  // The NVLink error recovers first: its GPU answers and its 18 links are up.
  Await("nvidia.com/gpu", OnlyUnhealthy({uuids[2], uuids[4]}), at + 1, &at);
  // GPU 2 only once its remap is applied and 300 ms have passed; GPU 4 never.
  testing::DeviceUpdate up = Await("nvidia.com/gpu", OnlyUnhealthy({uuids[4]}), at + 1, &at);
  EXPECT_GE(std::chrono::duration_cast<milliseconds>(up.at - plugin_->started()).count(), 2800);
  std::string log = plugin_->Log();
  EXPECT_THAT(log, HasSubstr("a row remap is pending until the GPU is reset"));
  EXPECT_THAT(log, HasSubstr("the row remapper shows nothing pending and no failure for 0.3s"));
  EXPECT_THAT(log, HasSubstr("all 18 NVLinks are active"));
  EXPECT_THAT(log, HasSubstr("stays Unhealthy until the plugin restarts: the row remapper reports "
                             "a failure"));

  // doctor names the GPU that needs a person, and why.
  testing::ProcessResult doctor =
      testing::RunProcess({build_paths::kBinary, "--sim", "dgx-h100", "doctor", "-o", "json",
                           "--kubelet-root-dir", root_});
  json report = json::parse(doctor.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << doctor.out << doctor.err;
  json health;
  for (const json& finding : report["findings"]) {
    if (finding["id"] == "plugin.health") health = finding;
  }
  ASSERT_TRUE(health.is_object()) << doctor.out;
  EXPECT_EQ(health["status"], "fail");
  EXPECT_THAT(health["evidence"].get<std::string>(), HasSubstr("GPU 4 (" + uuids[4] + "): XID 64"));
  EXPECT_THAT(health["evidence"].get<std::string>(),
              HasSubstr("the row remapper reports a failure"));
  EXPECT_THAT(health["evidence"].get<std::string>(), Not(HasSubstr("GPU 2 ")));
}

TEST_F(DevicePluginTest, AGpuThatFlapsPastTheLimitStaysUnhealthy) {
  std::vector<std::string> uuids = Uuids(Inventory("dgx-h100"));
  // Four contained ECC errors on GPU 1, each after it recovered; then one on GPU 0 as a marker.
  std::string sim = ProfileWithTimeline(root_, "dgx-h100", R"(
  - {at: 500ms, gpu: 1, event: xid, xid: 94}
  - {at: 1000ms, gpu: 1, event: xid, xid: 94}
  - {at: 1500ms, gpu: 1, event: xid, xid: 94}
  - {at: 2000ms, gpu: 1, event: xid, xid: 94}
  - {at: 2600ms, gpu: 0, event: xid, xid: 94}
)");
  Start(sim, {"--health-recovery-period", "200ms"});  // the default flap limit: 3
  Registered("nvidia.com/gpu");
  size_t at = 0;
  for (int fall = 1; fall <= 3; ++fall) {
    Await("nvidia.com/gpu", OnlyUnhealthy({uuids[1]}), at, &at);
    Await("nvidia.com/gpu", AllHealthy(8), at + 1, &at);
  }
  Await("nvidia.com/gpu", OnlyUnhealthy({uuids[1]}), at + 1, &at);
  Await("nvidia.com/gpu", OnlyUnhealthy({uuids[0], uuids[1]}), at + 1, &at);
  // GPU 0 recovers after its 200 ms; GPU 1, quiet for longer than that, is still held.
  Await("nvidia.com/gpu", OnlyUnhealthy({uuids[1]}), at + 1, &at);
  EXPECT_THAT(plugin_->Log(),
              HasSubstr("GPU 1 (" + uuids[1] +
                        ") stays Unhealthy until the plugin restarts: its GPU became Unhealthy 4 "
                        "times within 3600s (flap limit 3)"));
  testing::ProcessResult doctor =
      testing::RunProcess({build_paths::kBinary, "--sim", "dgx-h100", "doctor", "-o", "json",
                           "--kubelet-root-dir", root_});
  EXPECT_THAT(doctor.out, HasSubstr("became Unhealthy 4 times")) << doctor.err;
  // The state file doctor read says the same: held, so it does not recover while the plugin runs.
  std::ifstream file(dir_ + "/gpunode-health.json");
  json state = json::parse(file, nullptr, false);
  ASSERT_TRUE(state.is_object());
  ASSERT_EQ(state["unhealthy"].size(), 1u) << state.dump();
  EXPECT_EQ(state["unhealthy"][0]["uuid"], uuids[1]);
  EXPECT_THAT(state["unhealthy"][0]["held"].get<std::string>(), HasSubstr("flap limit 3"));
  EXPECT_EQ(state["unhealthy"][0]["recovers"], false) << state.dump();
}

TEST_F(DevicePluginTest, ReplicasFollowTheirGpuDownAndUp) {
  std::vector<std::string> uuids = Uuids(Inventory("dgx-h100"));
  std::string sim =
      ProfileWithTimeline(root_, "dgx-h100", "  - {at: 1000ms, gpu: 2, event: xid, xid: 48}\n");
  Start(sim,
        {"--config-file", Fixture("time-slicing-4.yaml"), "--health-recovery-period", "300ms"});
  Registered("nvidia.com/gpu");
  size_t at = 0;
  // Every replica of GPU 2 goes, the others stay, and all come back.
  Await("nvidia.com/gpu", OnlyUnhealthy({uuids[2] + "::"}), 0, &at);
  Await("nvidia.com/gpu", AllHealthy(32), at + 1);
}

TEST_F(DevicePluginTest, MigDevicesFollowTheirGpuAndAMigXidMarksOnlyItsDevice) {
  // GPU 0 has seven 1g.10gb devices (of the node's nine); GPU 1 has a 3g.40gb as gi 2 ci 0.
  std::string sim = ProfileWithTimeline(root_, "a100-mig", R"(
  - {at: 1000ms, gpu: 0, event: xid, xid: 48}
  - {at: 2000ms, gpu: 1, event: xid, xid: 48, gpu_instance_id: 2, compute_instance_id: 0}
)");
  Start(sim, {"--mig-strategy", "mixed", "--health-recovery-period", "300ms"}, {},
        {"--host-root", Fixture("host")});
  Registered("nvidia.com/mig-1g.10gb");
  Registered("nvidia.com/mig-3g.40gb");
  size_t at = 0;
  Await("nvidia.com/mig-1g.10gb", UnhealthyCount(7), 0, &at);
  Await("nvidia.com/mig-1g.10gb", AllHealthy(9), at + 1);
  Await("nvidia.com/mig-3g.40gb", UnhealthyCount(1));
  // GPU 1's other MIG devices (its 1g.10gb, gi 13) stayed Healthy.
  auto gpu1_small_down =
      kubelet_->WaitForDevices("nvidia.com/mig-1g.10gb", UnhealthyCount(1), milliseconds(0));
  EXPECT_FALSE(gpu1_small_down.has_value());
  Await("nvidia.com/mig-3g.40gb", AllHealthy(3));
}

TEST_F(DevicePluginTest, KubeletRestartIsFollowedByRegistrationWithinOneSecond) {
  Start("dgx-h100", {});
  Registered("nvidia.com/gpu");
  auto restarted = std::chrono::steady_clock::now();
  ASSERT_TRUE(kubelet_->Restart());
  testing::RegisteredPlugin again = Registered("nvidia.com/gpu", 2);
  auto reregistered = std::chrono::duration_cast<milliseconds>(again.at - restarted).count();
  RecordProperty("kubelet_restart_to_registered_ms", static_cast<int>(reregistered));
  EXPECT_LT(reregistered, 1000);
  EXPECT_EQ(again.endpoint, "nvidia-gpu.sock");
  size_t at = 0;
  Await("nvidia.com/gpu", AllHealthy(8), 0, &at);

  // One registration per kubelet start, however the plugin's reads split the directory events.
  EXPECT_EQ(kubelet_->RegistrationCount("nvidia.com/gpu"), 2);

  // Our own socket deleted: served again and registered again.
  int before = kubelet_->RegistrationCount("nvidia.com/gpu");
  auto deleted = std::chrono::steady_clock::now();
  ASSERT_EQ(unlink((dir_ + "/nvidia-gpu.sock").c_str()), 0);
  testing::RegisteredPlugin third = Registered("nvidia.com/gpu", before + 1);
  EXPECT_LT(std::chrono::duration_cast<milliseconds>(third.at - deleted).count(), 1000);
  struct stat st {};
  EXPECT_EQ(lstat((dir_ + "/nvidia-gpu.sock").c_str(), &st), 0);
}

TEST_F(DevicePluginTest, ADirectoryThatGoesAndComesBackIsWatchedAgain) {
  Start("dgx-h100", {});
  Registered("nvidia.com/gpu");
  kubelet_->Stop();
  // Moved away in one step (the plugin may serve its deleted socket again while a recursive
  // removal runs), then removed.
  fs::rename(dir_, root_ + "/gone");
  fs::remove_all(root_ + "/gone");
  // The first attempt to watch it again fails: the directory is not there yet.
  ASSERT_TRUE(plugin_->WaitForLog("retrying in 100 ms", kWait)) << plugin_->Log();
  ASSERT_TRUE(fs::create_directory(dir_));
  ASSERT_TRUE(kubelet_->Start());
  Registered("nvidia.com/gpu", 2);
  Await("nvidia.com/gpu", AllHealthy(8));
  EXPECT_THAT(plugin_->Log(), HasSubstr("the directory is back; looking at it again"));
}

TEST_F(DevicePluginTest, AnInotifyQueueOverflowIsFollowedByARescan) {
  Start("dgx-h100", {});
  Registered("nvidia.com/gpu");
  std::ifstream limit_file("/proc/sys/fs/inotify/max_queued_events");
  size_t limit = 16384;
  limit_file >> limit;
  if (limit > 65536) GTEST_SKIP() << "fs.inotify.max_queued_events is " << limit;
  // While the plugin cannot read, more events than the kernel queues, then a kubelet restart whose
  // events are lost in the overflow.
  plugin_->Signal(SIGSTOP);
  for (size_t i = 0; i <= limit; ++i) std::ofstream(dir_ + "/f" + std::to_string(i));
  ASSERT_TRUE(kubelet_->Restart());
  plugin_->Signal(SIGCONT);
  Registered("nvidia.com/gpu", 2);
  EXPECT_THAT(plugin_->Log(), HasSubstr("the inotify queue overflowed; looking at it again"));
}

TEST_F(DevicePluginTest, StaleSocketsAreRemovedAndSigtermStopsCleanly) {
  // A socket file left by a plugin that died.
  std::string stale = dir_ + "/nvidia-mig-1g.10gb.sock";
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", stale.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(fd);
  Start("dgx-h100", {});
  Registered("nvidia.com/gpu");
  EXPECT_FALSE(fs::exists(stale));
  plugin_->Signal(SIGTERM);
  EXPECT_EQ(plugin_->Wait(kWait), 0) << plugin_->Log();
  EXPECT_FALSE(fs::exists(dir_ + "/nvidia-gpu.sock"));
}

TEST_F(DevicePluginTest, SighupReloadsTheConfigAndRegistersAgain) {
  fs::create_directories(dir_ + "/config");
  std::string config = dir_ + "/config/config.yaml";
  fs::copy_file(Fixture("time-slicing-4.yaml"), config);
  Start("h200-1", {"--config-file", config});
  Registered("nvidia.com/gpu");
  Await("nvidia.com/gpu", AllHealthy(4));

  // A broken file is refused, when it is written and on SIGHUP; the running configuration stays.
  std::ofstream(config) << "flags:\n  renameByDefault: true\n";
  EXPECT_TRUE(plugin_->WaitForLog("config changed but is not applied", kWait)) << plugin_->Log();
  plugin_->Signal(SIGHUP);
  EXPECT_TRUE(plugin_->WaitForLog("SIGHUP: not reloaded", kWait)) << plugin_->Log();
  EXPECT_EQ(kubelet_->RegistrationCount("nvidia.com/gpu"), 1);
  // A good one is taken as soon as it is written, without a signal.
  std::ofstream(config) << "sharing:\n  timeSlicing:\n    resources:\n"
                           "    - {name: nvidia.com/gpu, replicas: 2}\n";
  Registered("nvidia.com/gpu", 2);
  Await("nvidia.com/gpu", AllHealthy(2));
  // SIGHUP restarts every plugin, changed or not, as NVIDIA's.
  plugin_->Signal(SIGHUP);
  Registered("nvidia.com/gpu", 3);
  Await("nvidia.com/gpu", AllHealthy(2));
}

// A ConfigMap mounted whole: --config-file names the directory, the default config picks one, and
// a new version of the ConfigMap (the kubelet swaps its ..data link) is running within 2 s.
TEST_F(DevicePluginTest, ConfigDirectoryPicksTheDefaultAndFollowsItsChanges) {
  std::string configs = dir_ + "/configs";
  auto publish = [&](const std::string& version, const std::string& ts4) {
    PublishConfigMap(configs, version, ts4);
  };
  fs::create_directories(configs);
  publish("..v1", "sharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 4}\n");
  Start("a10-pcie-4", {"--config-file", configs}, {"CONFIG_DEFAULT=ts4"});
  Registered("nvidia.com/gpu");
  Await("nvidia.com/gpu", AllHealthy(16));
  EXPECT_THAT(plugin_->Log(),
              HasSubstr("config ts4 from " + configs + "/ts4 (the default config)"));

  auto changed = std::chrono::steady_clock::now();
  publish("..v2", "sharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 2}\n");
  Registered("nvidia.com/gpu", 2);
  EXPECT_LT(std::chrono::steady_clock::now() - changed, std::chrono::seconds(2));
  Await("nvidia.com/gpu", AllHealthy(8));

  // A version that does not parse keeps the node's capacity.
  publish("..v3", "sharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 1}\n");
  EXPECT_TRUE(plugin_->WaitForLog("config changed but is not applied", kWait)) << plugin_->Log();
  EXPECT_EQ(kubelet_->RegistrationCount("nvidia.com/gpu"), 2);

  // A default that names no config is refused at start with the keys there.
  testing::ProcessResult r = testing::RunProcess(
      {build_paths::kBinary, "--sim", "a10-pcie-4", "device-plugin", "--kubelet-dir",
       dir_ + "/other", "--config-file", configs, "--default-config", "mps2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("default config mps2: no such config in " + configs +
                               " (configs: none, ts4)"));
}

// The window of a rolling update: the kubelet updates the ConfigMap volume while the new pod
// starts. A version published while the plugin registers (the kubelet double holds Register until
// it is there) is applied like any later change: the plugin watches its config before it
// registers.
TEST_F(DevicePluginTest, ConfigPublishedWhileThePluginRegistersIsApplied) {
  std::string configs = dir_ + "/configs";
  fs::create_directories(configs);
  PublishConfigMap(configs, "..v1", TimeSlicing(4));
  std::atomic<bool> published = false;
  kubelet_->OnRegister([&](const std::string&) {
    if (!published.exchange(true)) PublishConfigMap(configs, "..v2", TimeSlicing(2));
  });
  Start("a10-pcie-4", {"--config-file", configs}, {"CONFIG_DEFAULT=ts4"});
  Registered("nvidia.com/gpu");
  EXPECT_TRUE(published);
  Registered("nvidia.com/gpu", 2);
  Await("nvidia.com/gpu", AllHealthy(8));
  EXPECT_THAT(plugin_->Log(), HasSubstr("config changed (" + configs + "/ts4"));
}

// The same before the kubelet is there: the plugin starts, reads its config and waits for the
// kubelet's directory; a version published meanwhile is the one running once the kubelet comes.
TEST_F(DevicePluginTest, ConfigPublishedWhileThePluginWaitsForTheKubeletIsApplied) {
  kubelet_.reset();
  fs::remove_all(dir_);
  std::string configs = root_ + "/configs";
  fs::create_directories(configs);
  PublishConfigMap(configs, "..v1", TimeSlicing(4));
  Start("a10-pcie-4", {"--config-file", configs}, {"CONFIG_DEFAULT=ts4"});
  // Written once the config's watch is open: from here a change is an event.
  ASSERT_TRUE(plugin_->WaitForLog("watching " + configs + " for config changes", kWait))
      << plugin_->Log();
  ASSERT_TRUE(plugin_->WaitForLog("waiting for the kubelet's device-plugins directory", kWait))
      << plugin_->Log();
  PublishConfigMap(configs, "..v2", TimeSlicing(2));
  ASSERT_TRUE(fs::create_directory(dir_));
  kubelet_ = std::make_unique<testing::KubeletDouble>(dir_);
  ASSERT_TRUE(kubelet_->Start());
  std::optional<std::pair<size_t, testing::DeviceUpdate>> eight =
      kubelet_->WaitForDevices("nvidia.com/gpu", AllHealthy(8), kWait);
  ASSERT_TRUE(eight.has_value()) << plugin_->Log();
  EXPECT_EQ(plugin_->Stop(SIGTERM), 0) << plugin_->Log();
}

TEST_F(DevicePluginTest, BadConfigIsRefusedWithOneLine) {
  testing::ProcessResult r = testing::RunProcess(
      {build_paths::kBinary, "--sim", "dgx-h100", "device-plugin", "--kubelet-dir", dir_,
       "--config-file", Fixture("rename-under-flags.yaml")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpunode: " + Fixture("rename-under-flags.yaml") +
                       ":5: flags.renameByDefault: unknown key; renameByDefault belongs under "
                       "sharing.timeSlicing or sharing.mps\n");
  EXPECT_EQ(kubelet_->RegistrationCount("nvidia.com/gpu"), 0);

  r = testing::RunProcess({build_paths::kBinary, "device-plugin", "--check-config",
                           Fixture("rename-under-flags.yaml")});
  EXPECT_EQ(r.exit_code, 2);
  r = testing::RunProcess(
      {build_paths::kBinary, "device-plugin", "--check-config", Fixture("time-slicing-4.yaml")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("valid"));
  r = testing::RunProcess(
      {build_paths::kBinary, "--sim", "dgx-h100", "device-plugin", "--kubelet-dir", dir_},
      {"MIG_STRATEGY=sometimes"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("environment variable MIG_STRATEGY: \"sometimes\""));

  // The plugin process's own settings: one line naming the variable or flag and the fix.
  r = testing::RunProcess(
      {build_paths::kBinary, "--sim", "dgx-h100", "device-plugin", "--kubelet-dir", dir_},
      {"HEALTH_FLAP_LIMIT=often"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "gpunode: environment variable HEALTH_FLAP_LIMIT: \"often\" is not a count; give a "
            "whole number such as 3 (0 = no limit)\n");
  r = testing::RunProcess({build_paths::kBinary, "--sim", "dgx-h100", "device-plugin",
                           "--kubelet-dir", dir_, "--health-recovery-period", "2d"},
                          {"HEALTH_RECOVERY_PERIOD=1s"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "gpunode: --health-recovery-period \"2d\": not a duration; give e.g. 500ms, 30s, 5m "
            "or 1h30m (a bare number is seconds)\n");
  EXPECT_EQ(kubelet_->RegistrationCount("nvidia.com/gpu"), 0);
}

// The configs shipped under deploy/ are ConfigMaps: --check-config reads each data key as the
// config the plugin gets from the mounted volume, one line each, and an error names the file,
// the key and the line within it. The plugin itself given a manifest says what it is.
TEST(DevicePluginConfigMap, ShippedConfigMapsAreCheckedKeyByKey) {
  const std::string deploy =
      std::string(build_paths::kSourceDir) + "/deploy/device-plugin/overlays";
  testing::ProcessResult r =
      testing::RunProcess({build_paths::kBinary, "device-plugin", "--check-config",
                           deploy + "/per-node-config/configs.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* key : {"default", "time-slicing-4", "time-slicing-2"}) {
    EXPECT_THAT(r.out, HasSubstr("/per-node-config/configs.yaml[" + std::string(key) + "]: valid"));
  }
  EXPECT_THAT(r.out, HasSubstr("\"replicas\":4"));
  r = testing::RunProcess({build_paths::kBinary, "device-plugin", "--check-config",
                           deploy + "/time-slicing/time-slicing-config.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // MPS needs its root, which the DaemonSet sets (MPS_ROOT): without it the check says so.
  r = testing::RunProcess(
      {build_paths::kBinary, "device-plugin", "--check-config", deploy + "/mps/mps-config.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err,
              HasSubstr("mps-config.yaml[config.yaml]:3: sharing.mps: MPS needs the MPS root"));
  r = testing::RunProcess(
      {build_paths::kBinary, "device-plugin", "--check-config", deploy + "/mps/mps-config.yaml"},
      {"MPS_ROOT=/run/nvidia/mps"});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  testing::TempDir dir("gpunode-configmap");
  std::string bad = dir.Write("configs.yaml",
                              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pools\ndata:\n"
                              "  good: |\n    version: v1\n  bad: |\n    version: v1\n"
                              "    sharing:\n      timeSlicing:\n        resources:\n"
                              "        - name: nvidia.com/gpu\n          replicas: 1\n");
  r = testing::RunProcess({build_paths::kBinary, "device-plugin", "--check-config", bad});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("configs.yaml[good]: valid"));
  EXPECT_THAT(r.err, HasSubstr("configs.yaml[bad]:6:"));
  EXPECT_THAT(r.err, HasSubstr("replicas"));
  EXPECT_THAT(r.err, Not(HasSubstr("apiVersion")));
  std::string empty =
      dir.Write("empty.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: none\n");
  r = testing::RunProcess({build_paths::kBinary, "device-plugin", "--check-config", empty});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("this is a ConfigMap (none) with no data keys"));

  r = testing::RunProcess({build_paths::kBinary, "--sim", "dgx-h100", "device-plugin",
                           "--config-file", bad, "--kubelet-dir", dir.path()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("this is a ConfigMap (pools), not a config file; its data keys are "
                               "good, bad. Mount it"));
}

}  // namespace
}  // namespace gpunode
