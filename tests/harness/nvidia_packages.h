// NVIDIA's driver user space as Debian packages it (component non-free), which
// scripts/install-deps.sh fetches into a cache and never installs: the tests extract the packages
// they run a real NVIDIA program from (nvidia-cuda-mps-control) or lay a driver root out of.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gpunode::testing {

inline constexpr char kNvidiaDebCache[] = "/var/cache/gpunode/nvidia-debs";

// The cache's .deb of `package` ("nvidia-cuda-mps"), or "" when it has none.
std::string NvidiaDeb(const std::string& package);

// Every .deb of the cache, sorted.
std::vector<std::string> NvidiaDebs();

// The processes whose executable lies under `dir`: the NVIDIA programs a test extracted there
// and started (an MPS control daemon and the servers it forks).
std::vector<pid_t> ProcessesUnder(const std::string& dir);

}  // namespace gpunode::testing
