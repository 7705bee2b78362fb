// What names a resource's MPS plan on both sides of the MPS root: the control daemon writes it as
// the first line of the resource's `.started` marker, and the device plugin offers the resource
// only while that line is the one its own config makes. A daemon still running the config before
// a ConfigMap edit or a node label change is then never taken for the new one's.
#pragma once

#include <string>
#include <vector>

#include "plugin/rm/node.h"
#include "plugin/rm/resources.h"

namespace gpunode::plugin {

// The GPUs an MPS resource shares, each once, in the order of its devices: the daemon's
// CUDA_VISIBLE_DEVICES. The plan and its key both come from this list, so they cannot disagree.
std::vector<const NodeGpu*> MpsGpus(const Resource& resource, const Node& node);

// "plan nvidia.com/gpu replicas=4 gpus=GPU-0a…,GPU-1b…"
std::string MpsPlanKey(const Resource& resource, const Node& node);

}  // namespace gpunode::plugin
