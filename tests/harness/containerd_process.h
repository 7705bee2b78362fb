// The real containerd, started by a test on a temporary socket and state directory.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "process.h"

namespace gpunode::testing {

// The top of a containerd config (version 2) that keeps everything containerd writes under `dir`
// and serves CRI on `socket`; snapshotters that need a special filesystem are off.
std::string ContainerdTestConfig(const std::filesystem::path& dir, const std::string& socket);

// containerd running on `config` until destroyed (SIGTERM, then wait).
class ContainerdProcess {
 public:
  ContainerdProcess(const std::string& binary, const std::filesystem::path& config,
                    const std::filesystem::path& log);
  ~ContainerdProcess();
  ContainerdProcess(const ContainerdProcess&) = delete;
  ContainerdProcess& operator=(const ContainerdProcess&) = delete;

  // Polls CRI Status until containerd answers (it creates the socket late in its start).
  bool AwaitCri(const std::string& socket, std::chrono::seconds limit);
  void Stop();
  std::string Log() const;

 private:
  BackgroundProcess process_;
};

}  // namespace gpunode::testing
