// MPS end to end, with NVIDIA's own control daemon: Debian's nvidia-cuda-mps package (component
// non-free, driver 535; scripts/install-deps.sh fetches it into the cache below) is extracted
// with dpkg-deb into a driver root of the test's own, and `gpunode mps-control-daemon` runs its
// nvidia-cuda-mps-control, which starts and answers its pipe protocol without a GPU. The
// simulator stands in for NVML (compute mode, memory, compute capability); the device plugin
// runs against the kubelet double.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "build_paths.h"
#include "core/file_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "kubelet_double.h"
#include "nlohmann/json.hpp"
#include "nvidia_packages.h"
#include "process.h"

namespace gpunode {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::milliseconds;
using ::testing::Contains;
using testing::DeviceState;
using ::testing::HasSubstr;
using ::testing::Pair;
using testing::ProcessesUnder;
using ::testing::StartsWith;

constexpr milliseconds kWait{20000};
// Longer than the daemon command waits (up to 30 s) for NVIDIA's daemon to start and answer, so
// that a failure shows its error.
constexpr milliseconds kStartWait{60000};

testing::DevicePredicate Count(size_t count, const std::string& health) {
  return [count, health](const std::vector<DeviceState>& devices) {
    if (devices.size() != count) return false;
    for (const DeviceState& d : devices) {
      if (d.health != health) return false;
    }
    return true;
  };
}

class MpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    deb_ = testing::NvidiaDeb("nvidia-cuda-mps");
    if (deb_.empty()) GTEST_SKIP() << "no nvidia-cuda-mps .deb in " << testing::kNvidiaDebCache;
    char pattern[] = "/tmp/gpunode-mps-XXXXXX";  // unix socket paths must stay short
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    driver_ = dir_ + "/driver";
    mps_root_ = dir_ + "/mps";
    fs::create_directories(driver_);
    testing::ProcessResult x = testing::RunProcess({"/usr/bin/dpkg-deb", "-x", deb_, driver_});
    ASSERT_EQ(x.exit_code, 0) << x.err;
    ASSERT_TRUE(fs::exists(driver_ + "/usr/bin/nvidia-cuda-mps-control"));
    kubelet_ = std::make_unique<testing::KubeletDouble>(dir_);
    ASSERT_TRUE(kubelet_->Start());
  }
  void TearDown() override {
    plugin_.reset();
    daemon_.reset();
    kubelet_.reset();
    if (!driver_.empty()) {
      for (pid_t pid : ProcessesUnder(driver_)) kill(pid, SIGKILL);
    }
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  std::string Config(int replicas, const std::string& extra = "") {
    std::string path = dir_ + "/mps.yaml";
    std::ofstream(path) << "version: v1\n"
                        << extra << "sharing:\n  mps:\n    resources:\n"
                        << "    - name: nvidia.com/gpu\n      replicas: " << replicas << "\n";
    return path;
  }

  std::vector<std::string> Env() { return {"MPS_ROOT=" + mps_root_}; }
  // NVIDIA's daemon's own log for the plugin's resource, "" before it writes one.
  std::string ControlLog() {
    return core::ReadFile(mps_root_ + "/nvidia.com/gpu/log/control.log").value_or("");
  }

  void StartDaemon(const std::string& sim, const std::string& config) {
    daemon_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{build_paths::kBinary, "--sim", sim, "--log-level", "info",
                                 "--driver-root", driver_, "mps-control-daemon", "--config-file",
                                 config},
        testing::BackgroundProcess::Options{.extra_env = Env(),
                                            .stderr_path = dir_ + "/daemon.log"});
  }

  void StartPlugin(const std::string& sim, const std::string& config) {
    plugin_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{build_paths::kBinary, "--sim", sim, "--log-level", "info",
                                 "device-plugin", "--kubelet-dir", dir_, "--config-file", config},
        testing::BackgroundProcess::Options{.extra_env = Env(),
                                            .stderr_path = dir_ + "/plugin.log"});
  }

  // The doctor's plugin.mps-daemon finding for this MPS root.
  json DoctorFinding() {
    testing::ProcessResult r =
        testing::RunProcess({build_paths::kBinary, "--sim", "a10-pcie-4", "doctor", "-o", "json",
                             "--mps-root", mps_root_});
    json report = json::parse(r.out, nullptr, false);
    if (report.is_discarded()) return json{{"status", "unparsable: " + r.out + r.err}};
    for (const json& finding : report["findings"]) {
      if (finding["id"] == "plugin.mps-daemon") return finding;
    }
    return json{{"status", "missing"}};
  }

  // Asks the running daemon through NVIDIA's own client.
  std::string Ask(const std::string& command) {
    testing::ProcessResult r = testing::RunProcess(
        {"/bin/sh", "-c",
         "echo '" + command + "' | CUDA_MPS_PIPE_DIRECTORY=" + mps_root_ +
             "/nvidia.com/gpu/pipe CUDA_MPS_LOG_DIRECTORY=" + mps_root_ + "/nvidia.com/gpu/log " +
             driver_ + "/usr/bin/nvidia-cuda-mps-control"});
    return r.out;
  }

  std::string deb_, dir_, driver_, mps_root_;
  std::unique_ptr<testing::KubeletDouble> kubelet_;
  std::unique_ptr<testing::BackgroundProcess> daemon_;
  std::unique_ptr<testing::BackgroundProcess> plugin_;
};

TEST_F(MpsTest, DaemonSetsLimitsPluginAllocatesAndSigtermLeavesNothingBehind) {
  json inventory = json::parse(
      testing::RunProcess({build_paths::kBinary, "--sim", "a10-pcie-4", "inventory", "-o", "json"})
          .out);
  std::string config = Config(2);
  StartDaemon("a10-pcie-4", config);
  ASSERT_TRUE(daemon_->WaitForLog("MPS control daemons ready", kStartWait))
      << daemon_->Log() << ControlLog();
  EXPECT_TRUE(fs::exists(mps_root_ + "/.ready"));
  EXPECT_TRUE(fs::exists(mps_root_ + "/nvidia.com/gpu/.started"));
  std::string log = daemon_->Log();
  EXPECT_THAT(log, HasSubstr("nvidia-cuda-mps-control for 1 resource(s)"));
  for (const json& gpu : inventory["gpus"]) {
    EXPECT_THAT(log, HasSubstr(gpu["uuid"].get<std::string>() + "): compute mode "
                                                                "EXCLUSIVE_PROCESS"));
  }

  // The real daemon holds what was sent: 100/2 % of the SMs, half of each GPU's memory.
  EXPECT_EQ(Ask("get_default_active_thread_percentage"), "50.0\n");
  std::string control_log = ControlLog();
  EXPECT_THAT(control_log, HasSubstr("Cmd:set_default_active_thread_percentage 50"));
  for (size_t i = 0; i < inventory["gpus"].size(); ++i) {
    uint64_t mib = inventory["gpus"][i]["memory_total_mib"].get<uint64_t>();
    EXPECT_THAT(control_log, HasSubstr("Cmd:set_default_device_pinned_mem_limit " +
                                       std::to_string(i) + " " + std::to_string(mib / 2) + "M"));
  }

  json finding = DoctorFinding();
  EXPECT_EQ(finding["status"], "ok") << finding.dump();

  StartPlugin("a10-pcie-4", config);
  ASSERT_TRUE(kubelet_->WaitForRegistration("nvidia.com/gpu", 1, kWait).has_value())
      << plugin_->Log();
  auto update = kubelet_->WaitForDevices("nvidia.com/gpu", Count(8, "Healthy"), kWait);
  ASSERT_TRUE(update.has_value()) << plugin_->Log();
  std::string id = update->second.devices[0].id;
  std::vector<v1beta1::ContainerAllocateResponse> responses;
  grpc::Status st = kubelet_->Allocate("nvidia.com/gpu", {{id}}, &responses);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_THAT(responses[0].envs(),
              Contains(Pair("CUDA_MPS_PIPE_DIRECTORY", "/mps/nvidia.com/gpu/pipe")));
  ASSERT_EQ(responses[0].mounts_size(), 2);
  EXPECT_EQ(responses[0].mounts(0).host_path(), mps_root_ + "/nvidia.com/gpu/pipe");
  EXPECT_EQ(responses[0].mounts(0).container_path(), "/mps/nvidia.com/gpu/pipe");
  EXPECT_EQ(responses[0].mounts(1).host_path(), mps_root_ + "/shm");
  EXPECT_EQ(responses[0].mounts(1).container_path(), "/dev/shm");
  // failRequestsGreaterThanOne is true by default for MPS.
  st = kubelet_->Allocate(
      "nvidia.com/gpu", {{update->second.devices[0].id, update->second.devices[1].id}}, &responses);
  EXPECT_THAT(st.error_message(), HasSubstr("maximum request size for shared resources is 1"));

  // A daemon that dies is started again, with its limits.
  std::vector<pid_t> daemons = ProcessesUnder(driver_);
  ASSERT_FALSE(daemons.empty());
  for (pid_t pid : daemons) kill(pid, SIGKILL);
  ASSERT_TRUE(daemon_->WaitForLog("MPS control daemon started again", kStartWait))
      << daemon_->Log() << ControlLog();
  EXPECT_EQ(Ask("get_default_active_thread_percentage"), "50.0\n");

  // SIGTERM: quit, markers gone, compute mode back, no MPS process left; the plugin's replicas
  // turn Unhealthy.
  EXPECT_EQ(daemon_->Stop(SIGTERM), 0) << daemon_->Log();
  EXPECT_THAT(ProcessesUnder(driver_), ::testing::IsEmpty());
  EXPECT_FALSE(fs::exists(mps_root_ + "/.ready"));
  EXPECT_FALSE(fs::exists(mps_root_ + "/nvidia.com/gpu/.started"));
  EXPECT_THAT(daemon_->Log(), HasSubstr("compute mode DEFAULT"));
  EXPECT_TRUE(kubelet_->WaitForDevices("nvidia.com/gpu", Count(8, "Unhealthy"), kWait).has_value())
      << plugin_->Log();
  st = kubelet_->Allocate("nvidia.com/gpu", {{id}}, &responses);
  EXPECT_FALSE(st.ok());
  finding = DoctorFinding();
  EXPECT_EQ(finding["status"], "fail") << finding.dump();
  EXPECT_THAT(finding["summary"].get<std::string>(), HasSubstr("nvidia.com/gpu"));
}

TEST_F(MpsTest, PluginOffersNothingUntilTheDaemonIsReady) {
  std::string config = Config(3);
  StartPlugin("a10-pcie-4", config);
  ASSERT_TRUE(kubelet_->WaitForRegistration("nvidia.com/gpu", 1, kWait).has_value())
      << plugin_->Log();
  ASSERT_TRUE(kubelet_->WaitForDevices("nvidia.com/gpu", Count(0, "Healthy"), kWait).has_value());
  StartDaemon("a10-pcie-4", config);
  EXPECT_TRUE(
      kubelet_->WaitForDevices("nvidia.com/gpu", Count(12, "Healthy"), kStartWait).has_value())
      << plugin_->Log() << daemon_->Log();
  EXPECT_EQ(daemon_->Stop(SIGTERM), 0);
  EXPECT_THAT(ProcessesUnder(driver_), ::testing::IsEmpty());
}

// NVIDIA's control daemon serves one client at a time and drops a second one. The supervisor's
// check must not be such a client: an operator's commands, back to back across three check
// periods, all get their answer, and the daemon is never restarted for it.
TEST_F(MpsTest, AnOperatorsCommandsAreNeverDroppedByTheSupervisorsCheck) {
  StartDaemon("a10-pcie-4", Config(2));
  ASSERT_TRUE(daemon_->WaitForLog("MPS control daemons ready", kStartWait))
      << daemon_->Log() << ControlLog();
  int asked = 0;
  std::vector<std::string> dropped;
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(3500);
  while (std::chrono::steady_clock::now() < until) {
    std::string answer = Ask("get_default_active_thread_percentage");
    ++asked;
    if (answer != "50.0\n") dropped.push_back(answer);
  }
  EXPECT_THAT(dropped, ::testing::IsEmpty()) << "of " << asked << " commands";
  EXPECT_THAT(daemon_->Log(), ::testing::Not(HasSubstr("starting it again")));
  EXPECT_EQ(daemon_->Stop(SIGTERM), 0) << daemon_->Log();
}

// The node label that picks the plugin's config picks the daemon's too: a flip from MPS by 2 to
// MPS by 4 restarts NVIDIA's daemon with the new limits, and the plugin offers the new replicas
// once the daemon's marker names the new plan.
TEST_F(MpsTest, ALabelFlipRestartsTheDaemonOnTheNewPlanAndThePluginFollows) {
  testing::ApiServerDouble::Options plain_http;
  plain_http.token = "";
  testing::ApiServerDouble api(plain_http);
  ASSERT_TRUE(api.Start());
  std::string kubeconfig = dir_ + "/kubeconfig";
  std::ofstream(kubeconfig) << api.PlainKubeconfig();
  std::string configs = dir_ + "/configs";
  fs::create_directories(configs);
  for (int replicas : {2, 4}) {
    std::ofstream(configs + "/mps" + std::to_string(replicas))
        << "version: v1\nsharing:\n  mps:\n    resources:\n"
        << "    - {name: nvidia.com/gpu, replicas: " << replicas << "}\n";
  }
  auto label = [&api](const std::string& config) {
    api.AddObject(
        {{"kind", "Node"},
         {"apiVersion", "v1"},
         {"metadata",
          {{"name", "gpu-a"}, {"labels", {{"nvidia.com/device-plugin.config", config}}}}}});
  };
  label("mps2");
  testing::BackgroundProcess::Options options{
      .extra_env = {"MPS_ROOT=" + mps_root_, "NODE_NAME=gpu-a", "KUBECONFIG=" + kubeconfig},
      .stderr_path = dir_ + "/daemon.log"};
  daemon_ = std::make_unique<testing::BackgroundProcess>(
      std::vector<std::string>{build_paths::kBinary, "--sim", "a10-pcie-4", "--log-level", "info",
                               "--driver-root", driver_, "mps-control-daemon", "--config-file",
                               configs, "--default-config", "mps2"},
      options);
  ASSERT_TRUE(daemon_->WaitForLog("MPS control daemons ready", kStartWait))
      << daemon_->Log() << ControlLog();
  EXPECT_EQ(Ask("get_default_active_thread_percentage"), "50.0\n");
  ASSERT_TRUE(daemon_->WaitForLog("watching " + configs, kWait)) << daemon_->Log();

  options.stderr_path = dir_ + "/plugin.log";
  plugin_ = std::make_unique<testing::BackgroundProcess>(
      std::vector<std::string>{build_paths::kBinary, "--sim", "a10-pcie-4", "--log-level", "info",
                               "device-plugin", "--kubelet-dir", dir_, "--config-file", configs,
                               "--default-config", "mps2"},
      options);
  ASSERT_TRUE(kubelet_->WaitForRegistration("nvidia.com/gpu", 1, kWait).has_value())
      << plugin_->Log();
  ASSERT_TRUE(
      kubelet_->WaitForDevices("nvidia.com/gpu", Count(8, "Healthy"), kStartWait).has_value())
      << plugin_->Log() << daemon_->Log();

  label("mps4");
  ASSERT_TRUE(daemon_->WaitForLog("the MPS plan is now plan nvidia.com/gpu replicas=4", kWait))
      << daemon_->Log();
  EXPECT_TRUE(
      kubelet_->WaitForDevices("nvidia.com/gpu", Count(16, "Healthy"), kStartWait).has_value())
      << plugin_->Log() << daemon_->Log();
  EXPECT_EQ(Ask("get_default_active_thread_percentage"), "25.0\n");
  EXPECT_THAT(core::ReadFile(mps_root_ + "/nvidia.com/gpu/.started").value_or(""),
              StartsWith("plan nvidia.com/gpu replicas=4 "));

  EXPECT_EQ(daemon_->Stop(SIGTERM), 0) << daemon_->Log();
  EXPECT_THAT(ProcessesUnder(driver_), ::testing::IsEmpty());
}

// MPS serves 48 clients per GPU from Volta on: 20 replicas on a V100 are fine (NVIDIA's daemon
// holds V100s to the pre-Volta 16); 49 are refused before anything starts.
TEST_F(MpsTest, CheckConfigPrintsTheLimitsWithVoltasClientCap) {
  testing::ProcessResult r = testing::RunProcess(
      {"/usr/bin/env", "MPS_ROOT=" + mps_root_, build_paths::kBinary, "--sim", "dgx1-v100",
       "mps-control-daemon", "--check-config", "--config-file", Config(20)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("nvidia.com/gpu: GPU 7 ("));
  EXPECT_THAT(r.out, HasSubstr("5% of the SMs, 819 MiB pinned memory per client, 20 of 48"));
  r = testing::RunProcess({"/usr/bin/env", "MPS_ROOT=" + mps_root_, build_paths::kBinary, "--sim",
                           "dgx1-v100", "mps-control-daemon", "--check-config", "--config-file",
                           Config(49)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("49 replicas is more than the 48 clients MPS serves on GPU 0"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST_F(MpsTest, MpsIsRefusedOnMigDevices) {
  testing::ProcessResult r = testing::RunProcess(
      {"/usr/bin/env", "MPS_ROOT=" + mps_root_, build_paths::kBinary, "--sim", "a100-mig",
       "mps-control-daemon", "--check-config", "--config-file", Config(2)});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("which is in MIG mode, and MPS is not supported with MIG"));
}

}  // namespace
}  // namespace gpunode
