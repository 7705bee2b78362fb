// The GPU-to-GPU part of an `nvidia-smi topo -m` matrix, and the parser for its text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "load_result.h"
#include "nvml/abi.h"

namespace gpunode::sim {

struct TopologyCell {
  int nvlinks = 0;                                      // NV<n>; 0 for a PCIe-only cell
  nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;  // X, PIX, PXB, PHB, NODE, SYS
};

struct TopologyMatrix {
  std::vector<std::vector<TopologyCell>> cells;  // [row][column], square
  // From the NUMA Affinity column, or numbered from distinct CPU Affinity sets when that is
  // the only affinity column; empty entries where the capture says N/A.
  std::vector<std::optional<unsigned>> numa_nodes;

  size_t gpu_count() const { return cells.size(); }
};

// Where the text came from, for messages: "<name>:<line + line_offset>: ...".
struct TopologySource {
  std::string name;
  int line_offset = 0;
};

// Parses the matrix: a header of GPU0..GPUn-1 columns (then any NIC columns and CPU Affinity /
// NUMA Affinity / GPU NUMA ID), one "GPUi" row per GPU, tabs or spaces; NIC rows and everything
// from "Legend" on are ignored. Cells are X (diagonal only), NV<n>, PIX, PXB, PHB, NODE, SYS, and
// SOC (the old name of SYS). The matrix must be symmetric.
LoadResult<TopologyMatrix> parse_topology(std::string_view text, const TopologySource& source);

}  // namespace gpunode::sim
