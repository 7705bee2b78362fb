// The GPU-to-GPU link matrix, labelled like `nvidia-smi topo -m` (X, NV#, PIX, PXB, PHB, NODE,
// SYS), computed from NVLink remote ends and PCIe common ancestors.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nvml/abi.h"

namespace gpunode::gpu {

struct LinkInputs {
  std::vector<std::string> bus_ids;  // one per GPU, NVML form
  // For each GPU, the remote bus id of each active NVLink (a GPU's or an NVSwitch's).
  std::vector<std::vector<std::string>> nvlink_remotes;
};

// Counts NVLinks between GPUs a and b: direct links from a to b, or, through NVSwitches, the
// links each side has to switches both reach (the smaller side's count). 0 when none.
int NvLinkCount(const LinkInputs& inputs, size_t a, size_t b);

// The label for a PCIe-only path.
std::string PcieLabel(nvmlGpuTopologyLevel_t level);

using AncestorFn = std::function<absl::StatusOr<nvmlGpuTopologyLevel_t>(size_t, size_t)>;

// The full matrix; a pair whose PCIe ancestor cannot be read (lost GPU) is nullopt.
std::vector<std::vector<std::optional<std::string>>> LinkMatrix(const LinkInputs& inputs,
                                                                const AncestorFn& ancestor);

}  // namespace gpunode::gpu
