// `gpunode mps-control-daemon` at run time: the MPS control daemons of the resources the device
// plugin's config shares through MPS, following the same config sources as the plugin (the
// config's directory, the node label that selects a config, SIGHUP). When the plan changes, the
// daemons are quit and started with the new one; the plugin offers an MPS resource only while its
// daemon names the plugin's own plan (mps_plan_key.h), so the two never act on different configs.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/directory_watch.h"
#include "core/env.h"
#include "core/signal_fd.h"
#include "nvml/library.h"
#include "plugin/daemon/config_following.h"
#include "plugin/mps/mps_supervisor.h"
#include "plugin/rm/node.h"

namespace gpunode::plugin {

struct MpsDaemonOptions {
  // nvidia-cuda-mps-control, or why it was not found: only a plan that shares through MPS needs it.
  absl::StatusOr<std::string> binary = std::string();
  // The config's directory and node label, followed as the device plugin follows them.
  ConfigFollowing config;
  // How often every daemon is asked whether it is alive.
  std::chrono::milliseconds check_period{1000};
};

// Thread-safety: one thread, the one that calls Run; the daemons it starts are its children.
class MpsDaemon {
 public:
  // `signals` are read in the loop (SIGHUP re-reads the config); a stop signal is also the stop of
  // `env`, through which the daemons are run and awaited, and which outlives this.
  MpsDaemon(const nvml::Library& library, Node node, MpsDaemonOptions options, ConfigLoader loader,
            core::SignalFd signals, core::Env& env);
  ~MpsDaemon();

  // Starts the daemons `config` plans and keeps them to the config until a stop signal, then
  // quits them. An error when the first plan cannot be made or started (InvalidArgument for bad
  // input); a later change that fails keeps the running plan.
  absl::Status Run(plugin_config::ResolvedConfig config);

 private:
  // Reads the config after a change (`why`) and starts its plan when it differs.
  void ConfigChanged(const std::string& why);
  void Refuse(const std::string& why);
  absl::Status StartPlans(std::vector<MpsPlan> plans);
  void StopPlans();

  const nvml::Library& library_;
  const Node node_;
  MpsDaemonOptions options_;
  ConfigLoader loader_;
  core::SignalFd signals_;
  core::Env& env_;
  std::optional<core::DirectoryWatch> config_watch_;
  std::unique_ptr<MpsSupervisor> supervisor_;
  std::vector<MpsPlan> running_;
};

}  // namespace gpunode::plugin
