#include "plugin/mps/mps_control_daemon.h"

#include <memory>
#include <utility>

#include "core/log.h"
#include "core/signal_fd.h"
#include "core/status_macros.h"
#include "plugin/daemon/followed_config.h"
#include "plugin/mps/mps_control.h"
#include "plugin/mps/mps_daemon.h"
#include "plugin/mps/mps_limits.h"
#include "plugin/mps/mps_supervisor.h"
#include "plugin/rm/node.h"
#include "plugin_config/sources.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {
namespace {

plugin_config::ConfigLayer FlagLayer(const MpsControlDaemonOptions& options) {
  plugin_config::ConfigLayer flags = options.flags;
  plugin_config::ApplyDriverRootFlag(options.driver_root, flags);
  return flags;
}

absl::StatusOr<plugin_config::ResolvedConfig> Resolve(const MpsControlDaemonOptions& options) {
  return plugin_config::ResolveConfig(FlagLayer(options), options.config_file,
                                      &plugin_config::ProcessEnvironment);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> CheckMpsControlDaemonConfig(
    const MpsControlDaemonOptions& options, core::Env& env) {
  ASSIGN_OR_RETURN(plugin_config::ResolvedConfig resolved, Resolve(options));
  for (const std::string& warning : resolved.warnings) spdlog::warn("config: {}", warning);
  ASSIGN_OR_RETURN(
      std::unique_ptr<nvml::Library> library,
      options.open_nvml(plugin_config::NvmlDriverRoot(options.driver_root, resolved.config)));
  ASSIGN_OR_RETURN(Node node, ReadNode(*library, env.host()));
  ASSIGN_OR_RETURN(std::vector<MpsPlan> plans, PlanMps(*library, resolved.config, node));
  std::vector<std::string> lines;
  if (plans.empty()) lines.push_back("no resource is shared through MPS (sharing.mps)");
  for (const MpsPlan& plan : plans) {
    for (std::string& line : DescribeMpsLimits(plan.resource, plan.limits)) {
      lines.push_back(std::move(line));
    }
  }
  return lines;
}

absl::Status RunMpsControlDaemon(const MpsControlDaemonOptions& options, core::Env& env) {
  // Before any thread exists, so that the control loop alone takes these signals.
  ASSIGN_OR_RETURN(core::SignalFd signals, core::SignalFd::Open());

  // The device plugin's sources, read and followed the same way.
  ASSIGN_OR_RETURN(
      FollowedConfig followed,
      FollowConfig(FlagLayer(options), options.config_file, options.default_config,
                   "gpunode-mps-control-daemon", "the running MPS control daemons stay", env));
  const plugin_config::ResolvedConfig& config = followed.config;
  for (const std::string& warning : config.warnings) spdlog::warn("config: {}", warning);

  std::string driver_root = plugin_config::NvmlDriverRoot(options.driver_root, config.config);
  ASSIGN_OR_RETURN(std::unique_ptr<nvml::Library> library, options.open_nvml(driver_root));
  ASSIGN_OR_RETURN(Node node, ReadNode(*library, env.host()));

  MpsDaemonOptions daemon;
  daemon.binary = FindMpsControl(driver_root);
  daemon.config = followed.following;
  MpsDaemon mps(*library, std::move(node), std::move(daemon), followed.loader, std::move(signals),
                env);
  return mps.Run(config);
}

absl::Status MountMpsControlDaemonShm(const MpsControlDaemonOptions& options) {
  ASSIGN_OR_RETURN(plugin_config::ResolvedConfig resolved, Resolve(options));
  if (resolved.config.mps_root.empty()) {
    return absl::InvalidArgumentError(
        "mount-shm needs the MPS root; set --mps-root, MPS_ROOT or flags.mpsRoot");
  }
  return MountMpsShm(resolved.config.mps_root);
}

}  // namespace gpunode::plugin
