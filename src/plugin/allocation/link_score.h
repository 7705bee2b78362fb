// How well two GPUs are connected, in the points NVIDIA's allocator (go-gpuallocator) gives each
// link between them: 100 per NVLink, plus the PCIe path (same board 60, one PCIe switch 50,
// several switches 40, host bridge 30, same NUMA node 20, across sockets 10).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "nvml/abi.h"

namespace gpunode::plugin {

inline constexpr int kPointsPerNvLink = 100;

int PciePoints(nvmlGpuTopologyLevel_t level);

// Points of an `nvidia-smi topo -m` PCIe label (PIX, PXB, PHB, NODE, SYS; X for the same board);
// 0 for anything else.
int PciePoints(absl::string_view label);

// The NVLink count of an "NV<n>" label; nullopt for any other label.
std::optional<int> NvLinks(absl::string_view label);

// scores[a][b]: points of the pair (symmetric, 0 on the diagonal).
using ScoreMatrix = std::vector<std::vector<int>>;

}  // namespace gpunode::plugin
