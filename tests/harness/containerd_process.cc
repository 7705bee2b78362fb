#include "containerd_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "containerd/containerd_live.h"

namespace gpunode::testing {

std::string ContainerdTestConfig(const std::filesystem::path& dir, const std::string& socket) {
  std::ostringstream out;
  out << "version = 2\n"
      << "root = \"" << (dir / "root").string() << "\"\n"
      << "state = \"" << (dir / "state").string() << "\"\n"
      << "disabled_plugins = [\"io.containerd.snapshotter.v1.aufs\", "
         "\"io.containerd.snapshotter.v1.btrfs\", "
         "\"io.containerd.snapshotter.v1.devmapper\", "
         "\"io.containerd.snapshotter.v1.zfs\"]\n\n"
      << "[grpc]\n  address = \"" << socket << "\"\n"
      << "[ttrpc]\n  address = \"" << socket << ".ttrpc\"\n"
      << "[debug]\n  address = \"" << (dir / "debug.sock").string() << "\"\n"
      << "[plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"" << (dir / "opt").string()
      << "\"\n"
      << "[plugins.\"io.containerd.grpc.v1.cri\".cni]\n  conf_dir = \"" << (dir / "cni").string()
      << "\"\n";
  return out.str();
}

ContainerdProcess::ContainerdProcess(const std::string& binary, const std::filesystem::path& config,
                                     const std::filesystem::path& log)
    : log_(log) {
  // Opened before fork: the child of a process with gRPC threads may only make
  // async-signal-safe calls until exec.
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::execl(binary.c_str(), "containerd", "--config", config.c_str(), nullptr);
    ::_exit(127);
  }
  ::close(fd);
}

ContainerdProcess::~ContainerdProcess() { Stop(); }

bool ContainerdProcess::AwaitCri(const std::string& socket, std::chrono::seconds limit) {
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

void ContainerdProcess::Stop() {
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

std::string ContainerdProcess::Log() const {
  std::ifstream in(log_);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace gpunode::testing
