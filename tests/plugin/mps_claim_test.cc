// `gpunode mps-control-daemon claim`, the MPS control daemon of one DRA ResourceClaim, with
// NVIDIA's own control daemon: Debian's nvidia-cuda-mps package (scripts/install-deps.sh fetches
// it into the cache below) is extracted with dpkg-deb into a driver root of the test's own, as in
// mps_test.cc, and asked what it holds through NVIDIA's own client. The simulator stands in for
// NVML (UUIDs, MIG, memory, compute mode).
#include <signal.h>
#include <sys/mount.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "build_paths.h"
#include "core/file_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "nvidia_packages.h"
#include "process.h"
#include "tmpfs_mount.h"

namespace gpunode {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::ProcessesUnder;
using ::testing::StartsWith;

// Longer than the daemon waits (10 s) for NVIDIA's daemon to answer, so that a failure shows its
// error.
constexpr milliseconds kStartWait{60000};

// The value of `name` in the environment `pid` started with, or "".
std::string EnvironOf(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ");
  std::string entry;
  while (std::getline(in, entry, '\0')) {
    if (entry.starts_with(name + "=")) return entry.substr(name.size() + 1);
  }
  return "";
}

// What /proc/self/mountinfo says is mounted at `path` (type, source, options), or "" for nothing.
std::string MountAt(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line, found;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, device, root, mount_point;
    fields >> id >> parent >> device >> root >> mount_point;
    size_t dash = line.find(" - ");
    // The last mount on a path is the one seen there.
    if (mount_point == path && dash != std::string::npos) found = line.substr(dash + 3);
  }
  return found;
}

json Inventory(const std::string& sim) {
  return json::parse(
      testing::RunProcess({build_paths::kBinary, "--sim", sim, "inventory", "-o", "json"}).out);
}

// Runs a claim daemon that the test expects to refuse its flags; `timeout` ends one that does not.
testing::ProcessResult RunClaim(const std::string& sim, const std::string& driver,
                                const std::vector<std::string>& flags) {
  // PATH without a directory that could hold nvidia-cuda-mps-control other than the system's.
  std::vector<std::string> argv = {"/usr/bin/timeout",
                                   "30",
                                   "/usr/bin/env",
                                   "PATH=/usr/bin:/bin",
                                   build_paths::kBinary,
                                   "--sim",
                                   sim,
                                   "--driver-root",
                                   driver,
                                   "mps-control-daemon",
                                   "claim"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return testing::RunProcess(argv);
}

class MpsClaimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpunode-mpsclaim-XXXXXX";  // unix socket paths must stay short
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    driver_ = dir_ + "/driver";
    root_ = dir_ + "/mps/claim-1";
    fs::create_directories(driver_);
    inventory_ = Inventory("dgx-h100");
    ASSERT_GE(inventory_["gpus"].size(), 4u);
  }
  void TearDown() override {
    daemon_.reset();
    if (!driver_.empty()) {
      for (pid_t pid : ProcessesUnder(driver_)) kill(pid, SIGKILL);
    }
    // A daemon killed by a failed test leaves its tmpfs mounted.
    if (!root_.empty()) umount2((root_ + "/shm").c_str(), MNT_DETACH);
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  std::string Uuid(size_t gpu) { return inventory_["gpus"][gpu]["uuid"].get<std::string>(); }
  std::string Name(size_t gpu) { return inventory_["gpus"][gpu]["name"].get<std::string>(); }

  // NVIDIA's daemon from Debian's package in the driver root, or why the test cannot run it.
  std::string InstallMps() {
    std::string deb = testing::NvidiaDeb("nvidia-cuda-mps");
    if (deb.empty()) return std::string("no nvidia-cuda-mps .deb in ") + testing::kNvidiaDebCache;
    // The daemon mounts a tmpfs, which takes root with CAP_SYS_ADMIN: not every test machine.
    if (testing::TmpfsMount probe(dir_ + "/probe", 1 << 20); !probe.mounted()) {
      return "the claim's daemon mounts a tmpfs, and this test cannot: " + probe.error();
    }
    testing::ProcessResult x = testing::RunProcess({"/usr/bin/dpkg-deb", "-x", deb, driver_});
    if (x.exit_code != 0) return "dpkg-deb -x " + deb + ": " + x.err;
    return "";
  }

  void StartClaim(const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {build_paths::kBinary,
                                     "--sim",
                                     "dgx-h100",
                                     "--driver-root",
                                     driver_,
                                     "--log-level",
                                     "info",
                                     "mps-control-daemon",
                                     "claim",
                                     "--root",
                                     root_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    daemon_ = std::make_unique<testing::BackgroundProcess>(
        argv, testing::BackgroundProcess::Options{.stderr_path = dir_ + "/daemon.log"});
  }

  // Asks the running daemon through NVIDIA's own client.
  std::string Ask(const std::string& command) {
    testing::ProcessResult r =
        testing::RunProcess({"/bin/sh", "-c",
                             "echo '" + command + "' | CUDA_MPS_PIPE_DIRECTORY=" + root_ +
                                 "/pipe CUDA_MPS_LOG_DIRECTORY=" + root_ + "/log " + driver_ +
                                 "/usr/bin/nvidia-cuda-mps-control"});
    return r.out;
  }

  std::string ControlLog() { return core::ReadFile(root_ + "/log/control.log").value_or(""); }

  std::string dir_, driver_, root_;
  json inventory_;
  std::unique_ptr<testing::BackgroundProcess> daemon_;
};

TEST_F(MpsClaimTest, TheClaimsDaemonHoldsItsLimitsInItsRootAndSigtermLeavesNothingBehind) {
  if (std::string why = InstallMps(); !why.empty()) GTEST_SKIP() << why;
  StartClaim({"--devices", Uuid(0) + "," + Uuid(1), "--active-thread-percentage", "50",
              "--pinned-memory-limit", Uuid(1) + "=2048"});
  ASSERT_TRUE(daemon_->WaitForLog("MPS control daemon ready", kStartWait))
      << daemon_->Log() << ControlLog();

  // Everything in the claim's root, no resource directory under it.
  EXPECT_TRUE(fs::exists(root_ + "/.ready"));
  EXPECT_THAT(core::ReadFile(root_ + "/.started").value_or(""),
              StartsWith("claim claim-1 gpus=" + Uuid(0) + "," + Uuid(1) + "\n"));
  EXPECT_TRUE(fs::is_socket(root_ + "/pipe/control"));
  EXPECT_THAT(daemon_->Log(), HasSubstr("clients' pipe directory " + root_ + "/pipe, /dev/shm " +
                                        root_ + "/shm\n"));
  std::string shm = MountAt(root_ + "/shm");
  EXPECT_THAT(shm, StartsWith("tmpfs "));
  EXPECT_THAT(shm, HasSubstr("size=65536k"));

  // The real daemon holds what was given: the percentage, GPU 1's limit and none for GPU 0.
  EXPECT_EQ(Ask("get_default_active_thread_percentage"), "50.0\n");
  EXPECT_EQ(Ask("get_default_device_pinned_mem_limit 1"), "2G\n");
  EXPECT_EQ(Ask("get_default_device_pinned_mem_limit 0"), "");
  std::string control_log = ControlLog();
  EXPECT_THAT(control_log, HasSubstr("Cmd:set_default_device_pinned_mem_limit 1 2048M"));
  EXPECT_THAT(control_log, Not(HasSubstr("Cmd:set_default_device_pinned_mem_limit 0")));

  std::string log = daemon_->Log();
  EXPECT_THAT(log, HasSubstr("claim claim-1: GPU 0 (" + Uuid(0) + ", " + Name(0) +
                             "): 50% of the SMs, no pinned memory limit\n"));
  EXPECT_THAT(log, HasSubstr("claim claim-1: GPU 1 (" + Uuid(1) + ", " + Name(1) +
                             "): 50% of the SMs, 2048 MiB pinned memory per client\n"));
  EXPECT_THAT(log, HasSubstr(Uuid(0) + "): compute mode EXCLUSIVE_PROCESS"));
  EXPECT_THAT(log, HasSubstr(Uuid(1) + "): compute mode EXCLUSIVE_PROCESS"));
  EXPECT_THAT(log, Not(HasSubstr(Uuid(2) + "): compute mode")));

  // SIGTERM, as when the DRA plugin deletes the claim's Deployment.
  EXPECT_EQ(daemon_->Stop(SIGTERM), 0) << daemon_->Log();
  EXPECT_THAT(ProcessesUnder(driver_), IsEmpty());
  EXPECT_FALSE(fs::exists(root_ + "/.ready"));
  EXPECT_FALSE(fs::exists(root_ + "/.started"));
  EXPECT_EQ(MountAt(root_ + "/shm"), "");
  EXPECT_THAT(daemon_->Log(), HasSubstr(Uuid(1) + "): compute mode DEFAULT"));
}

// The daemon numbers the GPUs in --devices order, a limit left out is never sent, and a daemon
// killed behind the supervisor's back is started again with its limits by the next check.
TEST_F(MpsClaimTest, TheDaemonKeepsTheDevicesOrderSendsOnlyWhatIsGivenAndComesBack) {
  if (std::string why = InstallMps(); !why.empty()) GTEST_SKIP() << why;
  StartClaim({"--devices", Uuid(3) + "," + Uuid(2), "--pinned-memory-limit", Uuid(3) + "=1024"});
  ASSERT_TRUE(daemon_->WaitForLog("MPS control daemon ready", kStartWait))
      << daemon_->Log() << ControlLog();
  std::vector<pid_t> daemons = ProcessesUnder(driver_);
  ASSERT_EQ(daemons.size(), 1u);
  EXPECT_EQ(EnvironOf(daemons[0], "CUDA_VISIBLE_DEVICES"), Uuid(3) + "," + Uuid(2));
  EXPECT_EQ(Ask("get_default_device_pinned_mem_limit 0"), "1G\n");
  EXPECT_EQ(Ask("get_default_device_pinned_mem_limit 1"), "");
  EXPECT_EQ(Ask("get_default_active_thread_percentage"), "100.0\n");
  EXPECT_THAT(ControlLog(), Not(HasSubstr("Cmd:set_default_active_thread_percentage")));
  EXPECT_THAT(daemon_->Log(),
              HasSubstr("claim claim-1: GPU 3 (" + Uuid(3) + ", " + Name(3) +
                        "): default share of the SMs, 1024 MiB pinned memory per client\n"));

  kill(daemons[0], SIGKILL);
  ASSERT_TRUE(daemon_->WaitForLog("claim claim-1: MPS control daemon started again", kStartWait))
      << daemon_->Log() << ControlLog();
  std::vector<pid_t> again = ProcessesUnder(driver_);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_NE(again[0], daemons[0]);
  EXPECT_TRUE(fs::exists(root_ + "/.ready"));
  EXPECT_TRUE(fs::exists(root_ + "/.started"));
  EXPECT_EQ(Ask("get_default_device_pinned_mem_limit 0"), "1G\n");

  EXPECT_EQ(daemon_->Stop(SIGTERM), 0) << daemon_->Log();
  EXPECT_THAT(ProcessesUnder(driver_), IsEmpty());
  EXPECT_EQ(MountAt(root_ + "/shm"), "");
}

// Each refusal is one line naming the flag, exit 2, before anything is mounted or started.
TEST_F(MpsClaimTest, BadFlagsAreRefusedInOneLineBeforeAnythingStarts) {
  json mig_node = Inventory("a100-mig");
  std::string mig_gpu, mig_device, mig_index;
  for (const json& gpu : mig_node["gpus"]) {
    if (gpu["mig_enabled"] == true && !gpu["mig_devices"].empty()) {
      mig_gpu = gpu["uuid"].get<std::string>();
      mig_index = std::to_string(gpu["index"].get<int>());
      mig_device = gpu["mig_devices"][0]["uuid"].get<std::string>();
      break;
    }
  }
  ASSERT_FALSE(mig_device.empty()) << mig_node.dump();
  const std::string memory = std::to_string(inventory_["gpus"][1]["memory_total_mib"].get<int>());
  const std::string over = std::to_string(inventory_["gpus"][1]["memory_total_mib"].get<int>() + 1);
  const std::string both = Uuid(0) + "," + Uuid(1);
  struct Case {
    std::string sim;
    std::vector<std::string> flags;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"dgx-h100",
       {"--root", "mps/claim-1", "--devices", both},
       "--root mps/claim-1: not an absolute path"},
      {"dgx-h100",
       {"--root", root_, "--devices", Uuid(0) + "," + Uuid(0)},
       "--devices: " + Uuid(0) + " is given twice"},
      {"dgx-h100",
       {"--root", root_, "--devices", "GPU-00000000-0000-0000-0000-000000000000"},
       "--devices GPU-00000000-0000-0000-0000-000000000000: no such GPU on this node; its GPUs "
       "are " +
           Uuid(0) + ", " + Uuid(1)},
      {"a100-mig",
       {"--root", root_, "--devices", mig_device},
       "--devices " + mig_device + ": MPS through a claim on a MIG device is not supported"},
      {"a100-mig",
       {"--root", root_, "--devices", mig_gpu},
       "--devices " + mig_gpu + ": GPU " + mig_index + " is in MIG mode"},
      {"dgx-h100",
       {"--root", root_, "--devices", both, "--active-thread-percentage", "0"},
       "--active-thread-percentage 0: not from 1 to 100"},
      {"dgx-h100",
       {"--root", root_, "--devices", both, "--active-thread-percentage", "101"},
       "--active-thread-percentage 101: not from 1 to 100"},
      {"dgx-h100",
       {"--root", root_, "--devices", both, "--pinned-memory-limit", "2048"},
       "--pinned-memory-limit 2048: not UUID=MIB"},
      {"dgx-h100",
       {"--root", root_, "--devices", both, "--pinned-memory-limit", Uuid(2) + "=1024"},
       "--pinned-memory-limit " + Uuid(2) + "=1024: " + Uuid(2) + " is not one of --devices"},
      {"dgx-h100",
       {"--root", root_, "--devices", both, "--pinned-memory-limit", Uuid(0) + "=0"},
       "--pinned-memory-limit " + Uuid(0) + "=0: 0 is not a positive whole number of MiB"},
      {"dgx-h100",
       {"--root", root_, "--devices", both, "--pinned-memory-limit", Uuid(1) + "=" + over},
       "--pinned-memory-limit " + Uuid(1) + "=" + over + ": more than the " + memory +
           " MiB of GPU 1 (" + Name(1) + "); give at most " + memory},
  };
  for (const Case& c : cases) {
    testing::ProcessResult r = RunClaim(c.sim, driver_, c.flags);
    EXPECT_EQ(r.exit_code, 2) << c.says << "\n" << r.err;
    EXPECT_THAT(r.err, StartsWith("gpunode: " + c.says)) << c.says;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(fs::exists(root_)) << "a refused claim created its root";
}

TEST_F(MpsClaimTest, WithoutNvidiasProgramTheClaimFailsBeforeAnythingStarts) {
  for (const char* dir : {"/usr/bin/", "/bin/"}) {
    if (fs::exists(std::string(dir) + "nvidia-cuda-mps-control")) {
      GTEST_SKIP() << dir << "nvidia-cuda-mps-control is installed on this machine";
    }
  }
  testing::ProcessResult r = RunClaim("dgx-h100", driver_, {"--root", root_, "--devices", Uuid(0)});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("nvidia-cuda-mps-control is neither on PATH nor in " + driver_ +
                               "/usr/bin"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(root_));
}

TEST_F(MpsClaimTest, HelpNamesEveryFlagAndTheRootAndDevicesAreRequired) {
  testing::ProcessResult help =
      testing::RunProcess({build_paths::kBinary, "mps-control-daemon", "claim", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  for (const char* flag :
       {"--root", "--devices", "--active-thread-percentage", "--pinned-memory-limit"}) {
    EXPECT_THAT(help.out, HasSubstr(flag));
  }
  testing::ProcessResult r =
      testing::RunProcess({build_paths::kBinary, "--sim", "dgx-h100", "mps-control-daemon", "claim",
                           "--devices", Uuid(0)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--root is required"));
  EXPECT_THAT(r.err, HasSubstr("(see gpunode mps-control-daemon claim --help)"));
}

}  // namespace
}  // namespace gpunode
