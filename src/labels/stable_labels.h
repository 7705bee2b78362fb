// The operators' own, opt-in scheme: accelerator=nvidia-a10, gpu.count=4, gpu.memory=24g. These
// depend only on the hardware, so selectors built on them survive plugin and driver upgrades.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "labels/gfd_labels.h"
#include "labels/node_facts.h"

namespace gpunode::labels {

// Keys are `prefix` + accelerator, gpu.count, gpu.memory, and gpu.missing. An empty prefix leaves
// the namespace to NFD, which puts unprefixed names under feature.node.kubernetes.io/. gpu.count
// is the physical count (NodeFacts::physical_count): every NVIDIA GPU the machine has, of any
// model, the lost ones too, so that a node missing a card does not read n of n. gpu.missing,
// only on a node short of a GPU, names the ones NVML does not see (kube/missing_gpus_label.h).
// Nothing without GPUs.
Labels StableLabels(const NodeFacts& facts, std::string_view prefix);

// "nvidia-a10" from "NVIDIA A10", "nvidia-tesla-t4" from "Tesla T4".
std::string AcceleratorName(std::string_view model);

// The memory size a GPU is sold with, in GiB, from what NVML reports: whole GiB rounded up,
// except that GDDR GPUs with ECC on hide 1/16 of their memory (A10: 23028 MiB of 24 GiB), so a
// total within 0.5% of 15/16 of a multiple of 8 GiB counts as that multiple.
uint64_t MarketedMemoryGiB(uint64_t memory_mib);

}  // namespace gpunode::labels
