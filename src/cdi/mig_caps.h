// The capability device nodes that give a container one MIG device: /dev/nvidia-caps/nvidia-cap<N>
// for its GPU instance and for its compute instance, as nvidia-container-toolkit's
// internal/discover/mig.go finds them.
#pragma once

#include <string>
#include <vector>

#include "core/host_root.h"

namespace gpunode::cdi {

// Container paths of the access capabilities of GPU instance `gi` and compute instance `ci` on
// the GPU with device minor `gpu_minor`. The minor comes from the driver's capability file
// /proc/driver/nvidia/capabilities/gpu<m>/mig/gi<gi>[/ci<ci>]/access ("DeviceFileMinor: N"), or
// else from /proc/driver/nvidia-caps/mig-minors ("gpu<m>/gi<gi>/access N"). A capability the
// host does not list is left out.
std::vector<std::string> MigCapabilityNodes(const core::HostRoot& host, unsigned gpu_minor,
                                            unsigned gi, unsigned ci);

}  // namespace gpunode::cdi
