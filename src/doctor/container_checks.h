// container.*: what a pod sees, checked from inside it (--in-container). Inside a container the
// NVIDIA runtime shows NVML only the injected GPUs, numbered 0..n-1, while NVIDIA_VISIBLE_DEVICES
// keeps the host's indices or UUIDs and /dev/nvidiaN the host's minor numbers: the checks compare
// UUIDs where the list has them, and counts and minor numbers where it has indices.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/container_readings.h"
#include "doctor/context.h"
#include "doctor/finding.h"
#include "doctor/runner.h"

namespace gpunode::doctor {

// The devices the pod was given, from NVIDIA_VISIBLE_DEVICES as the runtime reads it: a list, or,
// with the device plugin's volume-mounts strategy, a directory (/var/run/nvidia-container-devices)
// whose entries are the IDs.
struct RequestedDevices {
  VisibleDevices visible;
  std::string evidence;  // "NVIDIA_VISIBLE_DEVICES=..." and, for a directory, its entries
};
RequestedDevices ReadRequestedDevices(const Context& context);

// A GPU as NVML shows it inside the container.
struct ContainerGpu {
  std::string uuid;
  std::optional<unsigned> minor;  // the host's /dev/nvidiaN
  bool mig_enabled = false;
  struct Mig {
    std::string uuid;
    std::string profile;
  };
  std::vector<Mig> mig_devices;
};

// Empty when NVML did not open or cannot enumerate.
std::vector<ContainerGpu> NvmlGpus(const Context& context);

// The GPU a request names (by GPU UUID, MIG UUID or MIG-GPU-<uuid>/gi/ci); null for an index, a
// "<gpu>:<mig>" pair, or a device NVML does not show.
const ContainerGpu* GpuOfRequest(const std::vector<ContainerGpu>& gpus,
                                 const DeviceRequest& request);

// What to do when a container sees more GPUs than it was given.
extern const char kIsolationFix[];

Finding ContainerNvml(const Context& context);
Finding ContainerVisibleDevices(const Context& context);
Finding ContainerMigDevices(const Context& context);
Finding ContainerDeviceNodes(const Context& context);
Finding ContainerDriverVersion(const Context& context, const Gpus& gpus);
Finding ContainerCudaCompat(const Context& context, const Gpus& gpus);
Finding ContainerDriverLibraries(const Context& context);

}  // namespace gpunode::doctor
