// What an MPS client container needs in its Allocate answer, as NVIDIA's plugin gives it:
// CUDA_MPS_PIPE_DIRECTORY=/mps/<resource>/pipe, the resource's pipe directory mounted there, and
// the MPS root's shm tmpfs as /dev/shm (client and server share memory through it).
#pragma once

#include <string>

#include "deviceplugin/v1beta1/api.pb.h"
#include "plugin/rm/resources.h"

namespace gpunode::plugin {

void AddMpsClient(const std::string& mps_root, const Resource& resource,
                  v1beta1::ContainerAllocateResponse& response);

}  // namespace gpunode::plugin
