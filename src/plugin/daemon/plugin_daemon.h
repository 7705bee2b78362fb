// The device plugin's life on a node: serve one socket per resource, register each with the
// kubelet, follow kubelet restarts and deleted sockets (inotify), reload on SIGHUP and stop
// cleanly on SIGTERM, SIGINT or SIGQUIT.
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
#include "health/health_board.h"
#include "health/health_monitor.h"
#include "nvml/library.h"
#include "plugin/daemon/config_following.h"
#include "plugin/server/plugin_server.h"
#include "plugin_config/sources.h"

namespace gpunode::plugin {

struct DaemonOptions {
  std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
  // The kubelet's Registration socket; empty: serve without registering (as NVIDIA's
  // --kubelet-socket "").
  std::string kubelet_socket = "/var/lib/kubelet/device-plugins/kubelet.sock";
  // Where the CDI spec goes when a CDI strategy is on.
  std::string cdi_spec_dir = "/var/run/cdi";
  // --cdi-disable-hooks all: the CDI spec names no hook (the hook's path is the config's).
  bool cdi_hooks_disabled = false;
  health::HealthOptions health;
  // The config's directory and node label, followed: a change is read again and applied when
  // the config it selects differs.
  ConfigFollowing config;
  std::chrono::milliseconds register_timeout{std::chrono::seconds(5)};
};

class PluginDaemon {
 public:
  // `library` is null when NVML could not be loaded and failOnInitError is off: the daemon then
  // offers nothing and waits for a signal, as NVIDIA's plugin does. `signals` are read in the
  // control loop (SIGHUP reloads); a stop signal is also the stop of `env`, whose host files,
  // clock and waits the daemon uses, and which outlives it.
  PluginDaemon(const nvml::Library* library, DaemonOptions options, ConfigLoader loader,
               core::SignalFd signals, core::Env& env);
  ~PluginDaemon();

  // Returns OK after a clean stop; an error when the first start fails (InvalidArgument for
  // bad input). A kubelet directory that is not there yet is waited for, and said so at info.
  absl::Status Run(const plugin_config::ResolvedConfig& config);

 private:
  struct Generation;

  absl::StatusOr<std::unique_ptr<Generation>> StartGeneration(
      const plugin_config::ResolvedConfig& config);
  absl::Status WriteNodeCdiSpec(const plugin_config::Config& config, const Node& node);
  void StopGeneration();
  void RemoveStaleSockets();
  void Reload();
  // Re-reads the config after a change in its directory or of the node label (`what`);
  // applies it only when it differs.
  void ConfigChanged(const std::string& what);
  // Replaces the running generation with one for `config`, or keeps the running one when the
  // new one does not start. `why` prefixes the log lines.
  void Apply(plugin_config::ResolvedConfig config, const char* why);
  // Opens the watch on the config's directory; without one, changes wait for a SIGHUP.
  void WatchConfig();
  // The config as it is now that the watch is open: `read_at_start` unless it changed since.
  plugin_config::ResolvedConfig ReadAgainAfterWatching(
      const plugin_config::ResolvedConfig& read_at_start);
  void HandleDirectoryEvents();
  // Watches the directory again after it went; retried with backoff until it is back.
  void Rewatch();
  // Waits, answering signals, until the kubelet's directory can be watched: the kubelet creates
  // it when it starts, which may be after this daemon. False when a stop signal came first; a
  // SIGHUP meanwhile reads `config` again.
  absl::StatusOr<bool> WaitForKubeletDir(plugin_config::ResolvedConfig& config);
  // Looks at the directory instead of at events that were lost: serves sockets that are gone and
  // registers again with a kubelet.sock newer than the registration.
  void Rescan(const char* why);
  void RestartServer(size_t i, const char* why);
  void TryRegister();
  int PollTimeoutMs() const;

  const nvml::Library* library_;
  DaemonOptions options_;
  ConfigLoader loader_;
  core::SignalFd signals_;
  core::Env& env_;
  std::optional<core::DirectoryWatch> watch_;  // empty while the directory is gone
  std::optional<std::chrono::steady_clock::time_point> next_rewatch_;
  std::chrono::milliseconds rewatch_backoff_{0};
  std::optional<core::DirectoryWatch> config_watch_;
  std::unique_ptr<Generation> generation_;
  plugin_config::ResolvedConfig running_config_;
  std::optional<std::chrono::steady_clock::time_point> next_register_;
  std::chrono::milliseconds backoff_{0};
  bool waiting_for_kubelet_ = false;  // "waiting for the kubelet" was logged
};

}  // namespace gpunode::plugin
