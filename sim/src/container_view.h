// What NVML shows inside a container: only the GPUs the container runtime gave it.
#pragma once

#include <string>

#include "node_model.h"

namespace gpunode::sim {

// Keeps the GPUs whose device node `nvidia<minor>` is in `dev_dir` and drops the rest, as the
// driver inside a container sees only the GPUs whose nodes the runtime created there: the kept
// ones are numbered from 0 in the node's order and keep their minor numbers, their PCIe levels
// and their timeline. A GPU without a minor number in the spec goes by its index. False, with
// one line in `error`, when `dev_dir` cannot be read.
bool keep_gpus_with_device_nodes(NodeModel& model, const std::string& dev_dir, std::string& error);

}  // namespace gpunode::sim
