// The device nodes a container gets besides its GPUs when passDeviceSpecs is on: NVIDIA's control
// devices that exist on the host, and the MIG capability devices by their minor numbers.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cdi/driver_files.h"
#include "core/host_root.h"

namespace gpunode::plugin {

struct HostDevices {
  // Container paths of /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools and
  // /dev/nvidia-modeset, those present under the device root.
  std::vector<std::string> control;
  // From /proc/driver/nvidia-caps/mig-minors: "gpu0/gi1/access" -> 12, "gpu0/gi1/ci0/access" -> 13.
  std::map<std::string, unsigned> mig_minors;
};

HostDevices ReadHostDevices(const core::HostRoot& host, const std::string& dev_root);

using cdi::UnderRoot;

}  // namespace gpunode::plugin
