// `gpunode mps-control-daemon`: NVIDIA's MPS control daemon for the device plugin's resources
// shared through MPS (sharing.mps), from the same config sources as the plugin.
#include <poll.h>

#include <csignal>
#include <iostream>
#include <memory>
#include <optional>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/nvml_session.h"
#include "core/log.h"
#include "plugin/daemon/signal_fd.h"
#include "plugin/mps/mps_control.h"
#include "plugin/mps/mps_supervisor.h"
#include "plugin/rm/node.h"
#include "plugin_config/sources.h"
#include "spdlog/spdlog.h"

namespace gpunode::cli {
namespace {

// How often every daemon is asked whether it is alive.
constexpr int kCheckPeriodMs = 1000;

struct MpsDaemonOptions {
  std::optional<std::string> config_file;
  std::optional<std::string> mps_root;
  bool check_config = false;
};

absl::StatusOr<plugin_config::ResolvedConfig> Resolve(const GlobalOptions& global,
                                                      const MpsDaemonOptions& options) {
  plugin_config::ConfigLayer flags;
  if (options.mps_root) flags.mps_root = *options.mps_root;
  if (global.driver_root != "/") flags.nvidia_driver_root = global.driver_root;
  return plugin_config::ResolveConfig(flags, options.config_file,
                                      &plugin_config::ProcessEnvironment);
}

int RunMpsControlDaemon(const GlobalOptions& global, const MpsDaemonOptions& options) {
  // Before any thread exists, so that the control loop alone takes these signals.
  absl::StatusOr<plugin::SignalFd> signals = plugin::SignalFd::Open();
  if (!signals.ok()) return ReportError(signals.status());
  absl::StatusOr<plugin_config::ResolvedConfig> resolved = Resolve(global, options);
  if (!resolved.ok()) return ReportError(resolved.status());
  for (const std::string& warning : resolved->warnings) spdlog::warn("config: {}", warning);
  const plugin_config::Config& config = resolved->config;

  GlobalOptions nvml_options = global;
  if (nvml_options.driver_root == "/") {
    nvml_options.driver_root = config.container_driver_root.empty() ? config.nvidia_driver_root
                                                                    : config.container_driver_root;
  }
  absl::StatusOr<std::unique_ptr<nvml::Library>> library = OpenNvml(nvml_options);
  if (!library.ok()) return ReportError(library.status());
  absl::StatusOr<plugin::Node> node = plugin::ReadNode(**library, host::HostRoot(global.host_root));
  if (!node.ok()) return ReportError(node.status());
  absl::StatusOr<std::vector<plugin::MpsPlan>> plans = plugin::PlanMps(**library, config, *node);
  if (!plans.ok()) return ReportError(plans.status());

  if (options.check_config) {
    if (plans->empty()) std::cout << "no resource is shared through MPS (sharing.mps)\n";
    for (const plugin::MpsPlan& plan : *plans) {
      for (const std::string& line : plugin::DescribeMpsLimits(plan.resource, plan.limits)) {
        std::cout << line << "\n";
      }
    }
    return kExitOk;
  }

  absl::StatusOr<std::string> binary = plugin::FindMpsControl(nvml_options.driver_root);
  if (plans->empty()) {
    spdlog::warn("no resource is shared through MPS (sharing.mps); nothing to run until stopped");
  } else if (!binary.ok()) {
    return ReportError(binary.status());
  }
  // The effective configuration: the daemon here, and each resource's limits as StartDaemon
  // sets them (logged there, as --check-config prints them).
  spdlog::info("MPS control daemon {} for {} resource(s)", binary.value_or("(none)"),
               plans->size());
  if (absl::Status st = plugin::AdoptDaemons(); !st.ok()) return ReportError(st);
  plugin::MpsSupervisor supervisor(**library, binary.value_or(""), std::move(*plans));
  if (absl::Status st = supervisor.Start(); !st.ok()) {
    spdlog::error("{}", st.message());
    return kExitFailures;
  }
  spdlog::info("MPS control daemons ready");
  while (true) {
    struct pollfd fd = {signals->fd(), POLLIN, 0};
    poll(&fd, 1, kCheckPeriodMs);
    while (std::optional<int> signal = signals->Read()) {
      if (*signal == SIGHUP) continue;  // the daemons keep running; limits come with a restart
      spdlog::warn("received signal {}; quitting the MPS control daemons", *signal);
      supervisor.Stop();
      return kExitOk;
    }
    plugin::ReapChildren();
    supervisor.Check();
  }
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
                  "the device plugin's config file (env CONFIG_FILE)");
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
