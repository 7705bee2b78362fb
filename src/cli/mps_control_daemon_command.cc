// `gpunode mps-control-daemon`: NVIDIA's MPS control daemon for the device plugin's resources
// shared through MPS (sharing.mps), from the same config sources as the plugin, followed as the
// plugin follows them (plugin/mps/mps_daemon.h).
#include <iostream>
#include <memory>
#include <optional>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/config_label.h"
#include "cli/nvml_session.h"
#include "core/log.h"
#include "host/host_root.h"
#include "plugin/daemon/signal_fd.h"
#include "plugin/mps/mps_control.h"
#include "plugin/mps/mps_daemon.h"
#include "plugin/mps/mps_supervisor.h"
#include "plugin/rm/node.h"
#include "plugin_config/sources.h"
#include "spdlog/spdlog.h"

namespace gpunode::cli {
namespace {

struct MpsDaemonOptions {
  std::optional<std::string> config_file;
  std::optional<std::string> default_config;
  std::optional<std::string> mps_root;
  bool check_config = false;
};

// NVIDIA's nvidiaDriverRoot says where the driver's libnvidia-ml is, unless --driver-root does;
// in a container the host's driver root is mounted at containerDriverRoot when that is set.
GlobalOptions NvmlOptions(const GlobalOptions& global, const plugin_config::Config& config) {
  GlobalOptions nvml_options = global;
  if (nvml_options.driver_root == "/") {
    nvml_options.driver_root = config.container_driver_root.empty() ? config.nvidia_driver_root
                                                                    : config.container_driver_root;
  }
  return nvml_options;
}

plugin_config::ConfigLayer FlagLayer(const GlobalOptions& global, const MpsDaemonOptions& options) {
  plugin_config::ConfigLayer flags;
  if (options.mps_root) flags.mps_root = *options.mps_root;
  if (global.driver_root != "/") flags.nvidia_driver_root = global.driver_root;
  return flags;
}

absl::StatusOr<plugin_config::ResolvedConfig> Resolve(const GlobalOptions& global,
                                                      const MpsDaemonOptions& options) {
  return plugin_config::ResolveConfig(FlagLayer(global, options), options.config_file,
                                      &plugin_config::ProcessEnvironment);
}

int CheckConfig(const GlobalOptions& global, const MpsDaemonOptions& options) {
  absl::StatusOr<plugin_config::ResolvedConfig> resolved = Resolve(global, options);
  if (!resolved.ok()) return ReportError(resolved.status());
  for (const std::string& warning : resolved->warnings) spdlog::warn("config: {}", warning);
  absl::StatusOr<std::unique_ptr<nvml::Library>> library =
      OpenNvml(NvmlOptions(global, resolved->config));
  if (!library.ok()) return ReportError(library.status());
  absl::StatusOr<plugin::Node> node = plugin::ReadNode(**library, host::HostRoot(global.host_root));
  if (!node.ok()) return ReportError(node.status());
  absl::StatusOr<std::vector<plugin::MpsPlan>> plans =
      plugin::PlanMps(**library, resolved->config, *node);
  if (!plans.ok()) return ReportError(plans.status());
  if (plans->empty()) std::cout << "no resource is shared through MPS (sharing.mps)\n";
  for (const plugin::MpsPlan& plan : *plans) {
    for (const std::string& line : plugin::DescribeMpsLimits(plan.resource, plan.limits)) {
      std::cout << line << "\n";
    }
  }
  return kExitOk;
}

int RunMpsControlDaemon(const GlobalOptions& global, const MpsDaemonOptions& options) {
  if (options.check_config) return CheckConfig(global, options);
  // Before any thread exists, so that the control loop alone takes these signals.
  absl::StatusOr<plugin::SignalFd> signals = plugin::SignalFd::Open();
  if (!signals.ok()) return ReportError(signals.status());

  // The device plugin's sources, read and followed the same way.
  absl::StatusOr<FollowedConfig> followed =
      FollowConfig(FlagLayer(global, options), options.config_file, options.default_config,
                   "gpunode-mps-control-daemon", "the running MPS control daemons stay");
  if (!followed.ok()) return ReportError(followed.status());
  const plugin_config::ResolvedConfig* config = &followed->config;
  for (const std::string& warning : config->warnings) spdlog::warn("config: {}", warning);

  GlobalOptions nvml_options = NvmlOptions(global, config->config);
  absl::StatusOr<std::unique_ptr<nvml::Library>> library = OpenNvml(nvml_options);
  if (!library.ok()) return ReportError(library.status());
  absl::StatusOr<plugin::Node> node = plugin::ReadNode(**library, host::HostRoot(global.host_root));
  if (!node.ok()) return ReportError(node.status());

  plugin::MpsDaemonOptions daemon;
  daemon.binary = plugin::FindMpsControl(nvml_options.driver_root);
  daemon.config = followed->following;
  plugin::MpsDaemon mps(**library, std::move(*node), std::move(daemon), followed->loader,
                        std::move(*signals));
  if (absl::Status st = mps.Run(*config); !st.ok()) return ReportError(st);
  return kExitOk;
}

int RunMountShm(const GlobalOptions& global, const MpsDaemonOptions& options) {
  absl::StatusOr<plugin_config::ResolvedConfig> resolved = Resolve(global, options);
  if (!resolved.ok()) return ReportError(resolved.status());
  if (resolved->config.mps_root.empty()) {
    return ReportError(absl::InvalidArgumentError(
        "mount-shm needs the MPS root; set --mps-root, MPS_ROOT or flags.mpsRoot"));
  }
  if (absl::Status st = plugin::MountMpsShm(resolved->config.mps_root); !st.ok()) {
    return ReportError(st);
  }
  return kExitOk;
}

}  // namespace

void AddMpsControlDaemonCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run) {
  auto o = std::make_shared<MpsDaemonOptions>();
  CLI::App* cmd = app.add_subcommand(
      "mps-control-daemon",
      "NVIDIA's MPS control daemon for the device plugin's sharing.mps resources");
  cmd->add_option("--config-file", o->config_file,
                  "the device plugin's config file, or a directory of configs the node label "
                  "nvidia.com/device-plugin.config picks from (env CONFIG_FILE)");
  cmd->add_option("--default-config", o->default_config,
                  "with a directory of configs: the one used while the node has no label "
                  "(env CONFIG_DEFAULT)");
  cmd->add_option("--mps-root", o->mps_root,
                  "host directory for the daemons' pipes and logs (env MPS_ROOT)");
  cmd->add_flag("--check-config", o->check_config,
                "print each GPU's MPS limits (threads, pinned memory, clients) and exit");
  CLI::App* shm = cmd->add_subcommand(
      "mount-shm", "mount a tmpfs at <mps-root>/shm for the MPS clients' /dev/shm, and exit");
  shm->fallthrough();
  cmd->callback([&global, &run, o, shm] {
    if (shm->parsed()) {
      run = [&global, o] { return RunMountShm(global, *o); };
    } else {
      run = [&global, o] { return RunMpsControlDaemon(global, *o); };
    }
  });
}

}  // namespace gpunode::cli
