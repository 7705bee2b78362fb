// Realises a topology matrix in the node model: the NVLinks and PCIe common-ancestor levels from
// which NVML's consumers recompute exactly that matrix.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "node_model.h"
#include "topology_matrix.h"

namespace gpunode::sim {

// NV<n> cells become n direct links each way when every GPU's links fit NVML's 36; an all-to-all
// group with one count becomes n links per GPU spread evenly over NVSwitches (`nvswitches` of
// them, or when not given the largest divisor of n up to 6). Switches get PCI addresses no GPU
// has. PCIe cells become common-ancestor levels; NV cells get NODE when both GPUs are on one NUMA
// node, else SYS. NUMA nodes in the matrix replace the GPUs' own. Returns the one-line error,
// prefixed with `source`, when the matrix does not fit the node.
std::optional<std::string> apply_topology(const TopologyMatrix& matrix,
                                          std::optional<unsigned> nvswitches,
                                          std::string_view source, NodeModel& node);

}  // namespace gpunode::sim
