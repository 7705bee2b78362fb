// The MPS control daemons of a node, one per resource shared through MPS, run as NVIDIA's
// mps-control-daemon runs them: the resource's GPUs in EXCLUSIVE_PROCESS compute mode (through
// NVML), `nvidia-cuda-mps-control -d` with the resource's pipe and log directories and GPUs, the
// default active thread percentage and each GPU's pinned memory limit sent on its pipe (those a
// claim leaves out are not), then the markers the device plugin or the DRA plugin waits for.
// Check() restarts a daemon that stopped accepting; Stop() quits every daemon, waits until none
// is left, removes the markers and puts the compute mode back to DEFAULT.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/env.h"
#include "nvml/device.h"
#include "nvml/library.h"
#include "plugin/mps/mps_control.h"
#include "plugin/mps/mps_limits.h"
#include "plugin/rm/node.h"
#include "plugin_config/config.h"

namespace gpunode::plugin {

struct MpsPlan {
  // As advertised: "nvidia.com/gpu" or "nvidia.com/gpu.shared"; "claim <id>" for a claim's daemon,
  // whose paths have no resource.
  std::string resource;
  host::MpsPaths paths;
  MpsLimits limits;
  // The first line of the `.started` marker: MpsPlanKey, or "claim <id> gpus=GPU-…,GPU-…".
  std::string key;

  bool operator==(const MpsPlan& other) const {
    return key == other.key && paths.root == other.paths.root;
  }
};

// What MPS's limits need of one GPU (name, memory, compute capability) from NVML; a value NVML
// does not report stays empty or 0.
MpsGpu ReadMpsGpu(const nvml::Device& device, const std::string& uuid, unsigned index);

// The daemons `config` asks for on `node`, with each GPU's limits from NVML. Empty when the
// config does not share through MPS. Fails like the device plugin would (MPS on MIG devices) or
// on a replica count over a GPU's MPS client cap.
absl::StatusOr<std::vector<MpsPlan>> PlanMps(const nvml::Library& library,
                                             const plugin_config::Config& config, const Node& node);

class MpsSupervisor {
 public:
  // The daemons are started and awaited through `env` (programs, /proc, waits), which outlives
  // this.
  MpsSupervisor(const nvml::Library& library, std::string binary, std::vector<MpsPlan> plans,
                core::Env& env);

  // Starts every daemon; on failure what was started is stopped again.
  absl::Status Start();
  // Connects to every daemon's control socket; one that refuses is started again with its
  // limits. Returns how many were restarted.
  int Check();
  void Stop();

 private:
  absl::Status SetComputeModes(nvmlComputeMode_t mode);
  absl::Status StartDaemon(const MpsPlan& plan);
  void QuitDaemon(const MpsPlan& plan);

  const nvml::Library& library_;
  std::string binary_;
  std::vector<MpsPlan> plans_;
  core::Env& env_;
};

// Becomes the reaper of orphaned descendants, so that the daemons `-d` forks away stay this
// process's children: they are reaped here and killed if `quit` leaves one behind.
absl::Status AdoptDaemons();
// Reaps children that exited; returns how many.
int ReapChildren();
// Waits up to `timeout` for every child to exit, then kills the ones left; returns how many it
// had to kill.
int AwaitChildren(core::Env& env, absl::Duration timeout);

// `mount-shm`, and a claim's daemon: a tmpfs at <root>/shm for the clients' /dev/shm, as
// NVIDIA's daemon mounts it (size 64 MiB, nosuid, nodev, noexec). Does nothing when one is
// mounted there already.
absl::Status MountMpsShm(const std::string& root);
// Unmounts (detaches) the tmpfs at <root>/shm; a root with none mounted there is fine.
absl::Status UnmountMpsShm(const std::string& root);

}  // namespace gpunode::plugin
