// `gpunode dra-plugin`: the node's GPUs through Dynamic Resource Allocation, with NVIDIA's DRA
// driver's names (driver gpu.nvidia.com, its devices, attributes and CDI IDs), so that
// DeviceClasses, ResourceClaims and CEL selectors written for that driver work unchanged.
//
// Run() publishes the node's ResourceSlice, serves the kubelet on the registration and service
// sockets, re-reads the devices every rescan interval (a MIG layout changed by `gpunode mig`, a
// GPU lost or back) and publishes again when they changed, until a stop is requested of its Env.
// The health monitor's verdicts reach the kubelet's health stream and the slice's device taints as
// soon as they change (device_health.h).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/env.h"
#include "health/health_monitor.h"
#include "kube/client.h"
#include "nvml/library.h"

namespace gpunode::dra {

struct DraPluginOptions {
  std::string node_name;
  std::string registrar_dir = "/var/lib/kubelet/plugins_registry";
  std::string plugins_dir = "/var/lib/kubelet/plugins";
  // The device plugins' directory, looked at for a device plugin serving the same GPUs.
  std::string device_plugins_dir = "/var/lib/kubelet/device-plugins";
  std::string cdi_root = "/var/run/cdi";
  std::string driver_root = "/";
  std::string dev_root = "/";
  std::string hook_path = "/usr/bin/nvidia-cdi-hook";  // empty: no hooks
  std::string nvidia_smi = "nvidia-smi";  // sets the time-slice intervals claims ask for
  // The claims' MPS control daemons (claim_mps.h): the namespace of their Deployments (the
  // plugin's own), their image (gpunode's; empty: MPS claims are refused), and gpunode's global
  // flags they run with (--sim of a simulated node, --driver-root, --log-level).
  std::string name_space = "gpunode-system";
  std::string mps_image = {};
  std::vector<std::string> mps_global_args = {};
  absl::Duration rescan_interval = absl::Seconds(30);
  // The XID policy, recovery period and flap limit, as the device plugin's (src/health).
  health::HealthOptions health;
};

// The clients: `slices` is the control loop's (ResourceSlices, the Node), `claims` the kubelet
// calls' (ResourceClaims); a kube::Client belongs to one thread.
struct ApiClients {
  kube::Client& slices;
  kube::Client& claims;
};

// Fails (one line, before anything is served) when a device plugin already serves nvidia.com/gpu
// on this node, the driver's files are not under driver_root, the checkpoint is corrupt or the
// sockets cannot be made.
// The host's files (/proc, the driver's, the device nodes) are read through `env`.
absl::Status RunDraPlugin(const nvml::Library& library, ApiClients api,
                          const DraPluginOptions& options, core::Env& env);

// Why this node must not run the DRA plugin, or nothing: a live device plugin socket (other than
// the kubelet's own) in `device_plugins_dir`, or nvidia.com/gpu in the Node's allocatable.
// NVIDIA says the device plugin and the DRA driver must never serve the same GPUs.
std::string DevicePluginConflict(const std::string& device_plugins_dir,
                                 const std::string& node_json);

}  // namespace gpunode::dra
