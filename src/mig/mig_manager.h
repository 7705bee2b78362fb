// `gpunode mig manager`: the GPU Operator's mig-manager contract on one node. The node label
// nvidia.com/mig.config names a layout of a mig-parted config file; each new value is brought
// about as NVIDIA's reconfigure script does it:
//
//   1. nvidia.com/mig.config.state=pending;
//   2. when the node has the layout already: the clients resumed, state success;
//   3. the plan is made (a layout that cannot fit fails here, nothing touched);
//   4. the GPU clients are paused: each client label (nvidia.com/gpu.deploy.device-plugin, ...)
//      that is "true" or unset becomes "paused-for-mig-change", which the client DaemonSets'
//      node affinity excludes, and the manager waits until no pod of the client selectors is
//      left on the node;
//   5. the layout is applied (a failure half-way rolls back, as `mig apply`);
//   6. the paused client labels become "true" again, and the state success or failed.
//
// The RBAC it needs: nodes get, watch (the label), patch (the labels); pods list.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/env.h"
#include "kube/client.h"
#include "nvml/library.h"

namespace gpunode::mig {

inline constexpr const char* kMigConfigLabel = "nvidia.com/mig.config";
inline constexpr const char* kMigConfigStateLabel = "nvidia.com/mig.config.state";
inline constexpr const char* kPausedForMigChange = "paused-for-mig-change";

struct ManagerOptions {
  std::string node;
  std::string config_file;  // read again for every change: a ConfigMap can be updated
  // Labels of the node that deploy a GPU client, paused while the GPUs change.
  std::vector<std::string> client_labels;
  // Label selectors of the client pods that must be gone from the node before the change.
  std::vector<std::string> client_selectors;
  absl::Duration client_timeout = absl::Minutes(5);
  absl::Duration poll_interval = absl::Seconds(1);
  bool force = false;  // change GPUs that processes still use
};

class MigManager {
 public:
  // `library`, `client` and `env` must outlive the manager. A stop requested of `env` while the
  // clients are awaited ends the wait: the clients are resumed and the change fails, instead of
  // leaving them paused behind a SIGKILL.
  MigManager(const nvml::Library& library, kube::Client& client, ManagerOptions options,
             core::Env& env);

  // Brings the node to layout `config_name` (steps 1-6 above). The state label says how it
  // ended; the returned Status says why it failed.
  absl::Status Reconcile(const std::string& config_name);

 private:
  absl::Status SetLabels(const std::vector<std::pair<std::string, std::string>>& labels);
  absl::Status SetState(const std::string& state);
  // Sets each client label whose value (null when unset) `select` picks to `to`.
  absl::Status RelabelClients(
      const std::function<bool(std::optional<std::string_view> value)>& select,
      const std::string& to);
  // Steps 4 and 6.
  absl::Status PauseClients();
  absl::Status ResumeClients();
  absl::Status AwaitClientsGone();
  absl::Status Change(const std::string& config_name);

  const nvml::Library& library_;
  kube::Client& client_;
  ManagerOptions options_;
  core::Env& env_;
};

}  // namespace gpunode::mig
