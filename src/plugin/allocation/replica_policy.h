// Picking devices of a time-sliced or MIG resource, as NVIDIA's plugin does: one device at a
// time, from the GPU (or MIG device) with the fewest replicas in use ("distributed") or the most
// ("packed").
#pragma once

#include <cstddef>
#include <vector>

#include "plugin/rm/resources.h"
#include "plugin_config/config.h"

namespace gpunode::plugin {

// Positions (into resource.devices) of the devices to allocate, in pick order: the required ones
// first, then greedy picks. A base device's replicas in use are its replicas that are not in
// `available`, plus those picked so far. Ties go to the base picked least in this request, then
// to the earlier base; within a base the lowest replica number is taken.
std::vector<size_t> PickShared(const Resource& resource, const std::vector<size_t>& available,
                               const std::vector<size_t>& required, size_t size,
                               plugin_config::SharedAllocationPolicy policy);

}  // namespace gpunode::plugin
