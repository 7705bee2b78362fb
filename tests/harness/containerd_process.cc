#include "containerd_process.h"

#include <signal.h>

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
    : process_({binary, "--config", config.string()},
               BackgroundProcess::Options{.stdout_path = log, .stderr_path = log}) {}

ContainerdProcess::~ContainerdProcess() { Stop(); }

bool ContainerdProcess::AwaitCri(const std::string& socket, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (containerd::QueryCriStatus(socket, std::chrono::milliseconds(500)).ok()) return true;
    if (!process_.Running()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void ContainerdProcess::Stop() { process_.Stop(SIGTERM); }

std::string ContainerdProcess::Log() const { return process_.Log(); }

}  // namespace gpunode::testing
