// A Container Device Interface spec for the node's GPUs and the driver found on it, with the
// layout of `nvidia-ctk cdi generate`: a device per GPU (its index and its UUID), per MIG device
// ("<gpu>:<mig>" and its UUID) and "all", each with only its device nodes; everything else a
// container needs is in the edits common to every device: the control device nodes, the driver's
// libraries, binaries and firmware as read-only bind mounts, the IPC sockets as writable ones, the
// update-ldcache and create-symlinks hooks, and NVIDIA_VISIBLE_DEVICES=void with the "void"
// device-list mount (so that a legacy NVIDIA hook still in the runtime injects nothing more).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cdi/driver_files.h"
#include "nlohmann/json.hpp"

namespace gpunode::cdi {

using Spec = nlohmann::ordered_json;

struct MigDevice {
  unsigned position = 0;  // the <mig> of "<gpu>:<mig>"
  std::string uuid;
  std::vector<std::string> capability_nodes;  // container paths, from MigCapabilityNodes
};

struct GpuDevice {
  unsigned index = 0;
  std::string uuid;
  unsigned minor = 0;  // /dev/nvidia<minor>
  std::vector<MigDevice> migs = {};
};

struct SpecOptions {
  std::string kind = "nvidia.com/gpu";
  std::string dev_root = "/";  // prefix of the device nodes' host paths
  // nvidia-cdi-hook (or nvidia-ctk) as the runtime will run it; nullopt leaves the hooks out.
  std::optional<std::string> hook_path = std::nullopt;
};

Spec BuildSpec(const std::vector<GpuDevice>& gpus, const DriverFiles& driver,
               const SpecOptions& options);

// The lowest CDI version whose features the spec uses, by the rules of the CDI project's
// specs-go/version.go (MinimumRequiredVersion): 0.3.0, or 0.4.0 for a mount "type", 0.5.0 for a
// device name not starting with a letter or a device node "hostPath", 0.6.0 for annotations or a
// "." in the class, 0.7.0 for intelRdt or additionalGids.
std::string MinimumCdiVersion(const Spec& spec);

}  // namespace gpunode::cdi
