// `gpunode mps-control-daemon claim`: the MPS control daemon of one DRA ResourceClaim, which the
// DRA plugin runs (a Deployment per claim) for a claim whose config shares its GPUs through MPS.
// The claim has a root of its own on the host, and everything sits in it: pipe/ and log/ of
// NVIDIA's daemon, the `.started` and `.ready` markers, and shm/, the tmpfs the claim's containers
// get as /dev/shm. The GPUs are put in EXCLUSIVE_PROCESS compute mode and the daemon started by
// MpsSupervisor, checked every period and started again when it stops accepting; a stop of the
// Env quits it, puts the compute mode back and unmounts shm/, after which the plugin may remove
// the root.
//
// Thread-safety: one thread, the one that calls RunMpsClaimDaemon; the daemons it starts are its
// children (it becomes their subreaper).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/env.h"
#include "nvml/library.h"

namespace gpunode::plugin {

struct MpsClaimOptions {
  std::string root;                  // --root: the claim's directory on the host
  std::vector<std::string> devices;  // --devices: full-GPU UUIDs, in the daemon's device order
  // --active-thread-percentage, 1 to 100; none: the daemon's default.
  std::optional<int> active_thread_percentage;
  // --pinned-memory-limit, as given: "UUID=MIB", at most one per GPU of `devices`.
  std::vector<std::string> pinned_memory_limits;
  std::string driver_root = "/";  // gpunode's --driver-root: NVML and nvidia-cuda-mps-control
  nvml::Opener open_nvml;
  // How often the daemon's control socket is connected to.
  absl::Duration check_period = absl::Seconds(1);
};

// Checks the options, then mounts shm/, starts the daemon and keeps it running until a stop of
// `env` (the host's programs, /proc and the waits go through it too); then quits it and unmounts
// shm/. The GPUs are the daemon's devices 0..n-1 in `devices` order. Before anything starts,
// InvalidArgument naming the flag and the fix for a root that is not absolute; no GPU, or one
// given twice; a UUID NVML does not know, a MIG device or a GPU in MIG mode; a percentage outside
// 1..100; a pinned memory limit that is malformed, for a GPU not in `devices`, given twice, or
// over the GPU's memory; NotFound when nvidia-cuda-mps-control is not found. Another error when
// the daemon does not start, after what was started is undone; a stop while it starts (the claim
// already going away) is no error.
absl::Status RunMpsClaimDaemon(const MpsClaimOptions& options, core::Env& env);

}  // namespace gpunode::plugin
