// MPS through a claim, as NVIDIA's DRA driver shares a GPU through MPS: the devices a
// `sharing.strategy: MPS` config of a claim applies to get one MPS control daemon of their own,
// run on this node in a Deployment `mps-control-daemon-<id>` in the plugin's namespace (so that
// it outlives a restart or an upgrade of the plugin, which the claim's running containers must
// not notice), and the claim's containers get that daemon's pipe directory as
// CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps and its tmpfs as /dev/shm through the claim's CDI spec.
//
// The daemon is `gpunode mps-control-daemon claim` (src/plugin/mps/mps_claim_daemon.h): NVIDIA's
// nvidia-cuda-mps-control with the claim's limits, its files in <plugins>/gpu.nvidia.com/mps/<id>
// on the host, where `.ready` says it answers with its limits set.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cdi/spec.h"
#include "core/env.h"
#include "dra/claim_allocation.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace gpunode::dra {

// One claim's MPS control daemon.
struct MpsDaemonSpec {
  std::string id;                                   // "<claim UID>-<config index>"
  std::vector<std::string> gpu_uuids;               // in the order CUDA_VISIBLE_DEVICES gives them
  int active_thread_percentage = 0;                 // 0: the daemon's default (all of the SMs)
  std::map<std::string, uint64_t> pinned_mib = {};  // by GPU UUID; a GPU not here: no limit
};

// The daemon `request` asks for over `gpu_uuids` (the GPUs of the devices its config applies
// to), the memory limits as NVIDIA's driver reads them: the default for every GPU, then the
// per-device ones, whose key is a GPU's UUID or its index in `gpu_uuids`, in whole MiB. A key
// that names none of the GPUs fails, naming the keys that would.
absl::StatusOr<MpsDaemonSpec> PlanMpsDaemon(const std::string& claim_uid, const MpsRequest& request,
                                            const std::vector<std::string>& gpu_uuids);

// The CDI container edits that make a container a client of the daemon whose files are in
// `root`: NVIDIA's DRA driver's (CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps, the pipe directory
// there and the daemon's tmpfs as /dev/shm).
cdi::Spec MpsContainerEdits(const std::string& root);

// Where the MPS control daemons of a node run; an interface so that the preparer's tests can
// play the daemons.
class MpsDaemons {
 public:
  virtual ~MpsDaemons() = default;
  // Starts the daemon unless it runs already, and returns once it answers with its limits set.
  virtual absl::Status Start(const MpsDaemonSpec& spec) = 0;
  // Stops the daemon and returns once it has quit and its files are gone; a daemon that does not
  // run is stopped already.
  virtual absl::Status Stop(const std::string& id) = 0;
  // Stops, without waiting, every daemon of this node whose ID is not in `keep`, and removes the
  // files of those that have quit: at start, the daemons of claims rolled back, of another boot,
  // or of a plugin stopped between a daemon's start and its record.
  virtual void StopAllBut(const std::set<std::string>& keep) = 0;
  // The directory of the daemon's files on the host (its pipe, log and shm directories).
  virtual std::string Root(const std::string& id) const = 0;
};

struct DeploymentMpsOptions {
  std::string node_name;
  std::string name_space;  // the plugin's own: the Deployments are the plugin's
  // The daemon's image, gpunode's own (deploy/dra sets IMAGE_NAME to the plugin's image). Empty:
  // a claim that asks for MPS fails to prepare, saying so.
  std::string image;
  // <plugins>/gpu.nvidia.com/mps: the plugin sees the kubelet's plugins directory at its host
  // path (deploy/dra mounts it so), and the daemon's pod mounts it from there.
  std::string mps_dir;
  // gpunode's global flags the daemon runs with, so that it sees the GPUs the plugin sees:
  // --sim of a simulated node, --driver-root, --log-level.
  std::vector<std::string> global_args;
  // The driver root when it is not "/", mounted into the daemon's pod at the same (host) path;
  // with "/" the NVIDIA runtime gives the pod the driver, as it gives it to the plugin.
  std::string driver_root;
  absl::Duration ready_timeout = absl::Seconds(30);
};

// The daemons as Deployments. Thread-safety: none; the preparer calls it under its mutex, with
// the client of the kubelet calls.
class DeploymentMpsDaemons : public MpsDaemons {
 public:
  // `client` and `env` (the ready marker's wait, which a stop of the plugin ends) outlive this.
  DeploymentMpsDaemons(DeploymentMpsOptions options, kube::Client& client, core::Env& env)
      : options_(std::move(options)), client_(client), env_(env) {}

  absl::Status Start(const MpsDaemonSpec& spec) override;
  absl::Status Stop(const std::string& id) override;
  void StopAllBut(const std::set<std::string>& keep) override;
  std::string Root(const std::string& id) const override;

  // The Deployment that runs the daemon: what Start creates, and what `dra-plugin --dry-run`
  // could show.
  nlohmann::json Deployment(const MpsDaemonSpec& spec) const;

 private:
  absl::Status Delete(const std::string& id);
  // Removes the daemon's directory (`id` may be the directory's name) once the daemon has quit;
  // false while its `.ready` marker or its tmpfs is still there.
  bool RemoveFiles(const std::string& id) const;
  std::string DeploymentsPath() const;

  const DeploymentMpsOptions options_;
  kube::Client& client_;
  core::Env& env_;
};

// "mps-control-daemon-<id>", NVIDIA's name for the Deployment of a claim's daemon.
std::string MpsDaemonName(const std::string& id);

}  // namespace gpunode::dra
