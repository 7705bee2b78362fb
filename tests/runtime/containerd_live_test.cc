// The real containerd from Debian, started on a temporary socket and state directory, asked over
// CRI whether the nvidia handler is loaded: through `gpunode runtime status`, the way operators
// and doctor's runtime.containerd-live check meet it.
#include "containerd/containerd_live.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "process.h"

namespace gpunode {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using json = nlohmann::json;

testing::ProcessResult Gpunode(std::vector<std::string> args) {
  args.insert(args.begin(), GPUNODE_BINARY);
  return testing::RunProcess(args);
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

// containerd running on `config` until destroyed (SIGTERM, then wait).
class Containerd {
 public:
  Containerd(const fs::path& config, const fs::path& log) : log_(log) {
    // Opened before fork: the child of a process with gRPC threads may only make
    // async-signal-safe calls until exec.
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      ::execl(GPUNODE_CONTAINERD, "containerd", "--config", config.c_str(), nullptr);
      ::_exit(127);
    }
    ::close(fd);
  }
  ~Containerd() { Stop(); }

  // Polls CRI Status until containerd answers (it creates the socket late in its start).
  bool AwaitCri(const std::string& socket, std::chrono::seconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (containerd::QueryCriStatus(socket, std::chrono::milliseconds(500)).ok()) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
  }

  std::string Log() const { return ReadAll(log_); }

 private:
  pid_t pid_ = -1;
  fs::path log_;
};

class ContainerdLive : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(GPUNODE_CONTAINERD).empty()) GTEST_SKIP() << "containerd is not installed";
    if (::geteuid() != 0) GTEST_SKIP() << "containerd needs root to start";
    char tmpl[] = "/tmp/gpunode-ctd-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    socket_ = (dir_ / "containerd.sock").string();
    config_ = dir_ / "config.toml";
    // Everything containerd writes stays under dir_; snapshotters that need a special
    // filesystem are off so nothing depends on the host's disks.
    std::ofstream(config_)
        << "version = 2\n"
        << "root = \"" << (dir_ / "root").string() << "\"\n"
        << "state = \"" << (dir_ / "state").string() << "\"\n"
        << "disabled_plugins = [\"io.containerd.snapshotter.v1.aufs\", "
           "\"io.containerd.snapshotter.v1.btrfs\", "
           "\"io.containerd.snapshotter.v1.devmapper\", "
           "\"io.containerd.snapshotter.v1.zfs\"]\n\n"
        << "[grpc]\n  address = \"" << socket_ << "\"\n"
        << "[ttrpc]\n  address = \"" << socket_ << ".ttrpc\"\n"
        << "[debug]\n  address = \"" << (dir_ / "debug.sock").string() << "\"\n"
        << "[plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"" << (dir_ / "opt").string()
        << "\"\n"
        << "[plugins.\"io.containerd.grpc.v1.cri\".cni]\n  conf_dir = \"" << (dir_ / "cni").string()
        << "\"\n"
        << "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
        << "  runtime_type = \"io.containerd.runc.v2\"\n"
        << "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
        << "    SystemdCgroup = true\n";
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  fs::path dir_;
  fs::path config_;
  std::string socket_;
};

TEST_F(ContainerdLive, StatusSeesTheHandlerOnlyAfterConfigure) {
  {
    Containerd containerd(config_, dir_ / "before.log");
    ASSERT_TRUE(containerd.AwaitCri(socket_, std::chrono::seconds(20))) << containerd.Log();
    testing::ProcessResult r = Gpunode({"runtime", "status", "--socket", socket_});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.out, HasSubstr("handler nvidia: not loaded (default runtime: runc)"));
    EXPECT_THAT(r.out, HasSubstr("RuntimeReady: true"));
  }

  testing::ProcessResult r =
      Gpunode({"runtime", "configure", "--config", config_.string(), "--cdi"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  Containerd containerd(config_, dir_ / "after.log");
  ASSERT_TRUE(containerd.AwaitCri(socket_, std::chrono::seconds(20))) << containerd.Log();
  r = Gpunode({"runtime", "status", "--socket", socket_, "--handler", "nvidia", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  json status = json::parse(r.out);
  EXPECT_EQ(status["handler"]["loaded"], true);
  EXPECT_EQ(status["handler"]["runtime_type"], "io.containerd.runc.v2");
  EXPECT_EQ(status["handler"]["options"]["BinaryName"], "/usr/bin/nvidia-container-runtime");
  EXPECT_EQ(status["handler"]["options"]["SystemdCgroup"], true);  // inherited from runc
  EXPECT_EQ(status["handler"]["default"], false);
  EXPECT_EQ(status["default_runtime"], "runc");
  std::map<std::string, bool> conditions;
  for (const json& c : status["conditions"]) conditions[c["type"]] = c["status"];
  EXPECT_EQ(conditions["RuntimeReady"], true);
  EXPECT_EQ(conditions.count("NetworkReady"), 1u);  // false here: no CNI config in dir_/cni

  r = Gpunode({"runtime", "status", "--socket", socket_, "--handler", "kata"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("handler kata: not loaded"));
  containerd.Stop();
  ASSERT_EQ(Gpunode({"runtime", "revert", "--config", config_.string()}).exit_code, 0);
}

TEST(ContainerdStatus, NothingListeningIsAFailureNamingTheSocket) {
  testing::ProcessResult r = Gpunode(
      {"runtime", "status", "--socket", "/tmp/gpunode-no-such.sock", "--timeout-ms", "300"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("unix:///tmp/gpunode-no-such.sock"));
  EXPECT_THAT(r.err, HasSubstr("is containerd running?"));
}

}  // namespace
}  // namespace gpunode
