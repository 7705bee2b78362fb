// `gpunode mps-control-daemon`: NVIDIA's MPS control daemon for the device plugin's resources
// shared through MPS (sharing.mps), from the same config sources as the plugin, followed as the
// plugin follows them (plugin/mps/mps_control_daemon.h); `claim`: the daemon of one DRA
// ResourceClaim, which the DRA plugin runs (plugin/mps/mps_claim_daemon.h).
#include <csignal>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/config_flags.h"
#include "cli/nvml_session.h"
#include "cli/report_error.h"
#include "core/system_env.h"
#include "plugin/mps/mps_claim_daemon.h"
#include "plugin/mps/mps_control_daemon.h"

namespace gpunode::cli {
namespace {

CLI::App* AddClaimCommand(CLI::App& parent, const GlobalOptions& global, CommandRunner& run) {
  auto o = std::make_shared<plugin::MpsClaimOptions>();
  CLI::App* claim = parent.add_subcommand(
      "claim",
      "the MPS control daemon of one DRA ResourceClaim, run by the DRA plugin until SIGTERM: "
      "pipe/, log/, shm/ (a tmpfs for the clients' /dev/shm) and the .started and .ready "
      "markers in --root");
  claim->add_option("--root", o->root, "the claim's directory on the host (an absolute path)")
      ->required();
  claim
      ->add_option("--devices", o->devices,
                   "the claim's GPUs: full-GPU UUIDs, comma-separated, in the order the daemon "
                   "numbers them (CUDA_VISIBLE_DEVICES)")
      ->delimiter(',')
      ->required();
  claim->add_option("--active-thread-percentage", o->active_thread_percentage,
                    "the percent of each GPU's SMs a client may use, 1 to 100 (default: the "
                    "daemon's, all of them)");
  claim->add_option("--pinned-memory-limit", o->pinned_memory_limits,
                    "UUID=MIB: the device memory a client may pin on that GPU of --devices "
                    "(repeatable, one per GPU; default: no limit)");
  claim->callback([&global, &run, o] {
    run = [&global, o] {
      o->driver_root = global.driver_root;
      o->open_nvml = NvmlOpener(global);
      core::SystemEnv env(global.host_root);
      if (absl::Status st = env.StopOnSignals({SIGINT, SIGTERM, SIGQUIT}); !st.ok()) {
        return Report(st);
      }
      return Report(plugin::RunMpsClaimDaemon(*o, env));
    };
  });
  return claim;
}

}  // namespace

void AddMpsControlDaemonCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run) {
  auto o = std::make_shared<plugin::MpsControlDaemonOptions>();
  auto config_flags = std::make_shared<ConfigFlags>();
  auto check_config = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "mps-control-daemon",
      "NVIDIA's MPS control daemon for the device plugin's sharing.mps resources, or (claim) "
      "for one DRA ResourceClaim");
  cmd->add_option("--config-file", o->config_file,
                  "the device plugin's config file, or a directory of configs the node label "
                  "nvidia.com/device-plugin.config picks from (env CONFIG_FILE)");
  cmd->add_option("--default-config", o->default_config,
                  "with a directory of configs: the one used while the node has no label "
                  "(env CONFIG_DEFAULT)");
  config_flags->Add(*cmd, "--mps-root",
                    "host directory for the daemons' pipes and logs (env MPS_ROOT)");
  cmd->add_flag("--check-config", *check_config,
                "print each GPU's MPS limits (threads, pinned memory, clients) and exit");
  CLI::App* shm = cmd->add_subcommand(
      "mount-shm", "mount a tmpfs at <mps-root>/shm for the MPS clients' /dev/shm, and exit");
  shm->fallthrough();
  CLI::App* claim = AddClaimCommand(*cmd, global, run);
  // The global flags as main leaves them once parsing is done.
  auto with_global = [&global, o, config_flags] {
    // --mps-root, the one config flag here, takes any text.
    o->flags = config_flags->Layer().value_or(plugin_config::ConfigLayer{});
    o->driver_root = global.driver_root;
    o->open_nvml = NvmlOpener(global);
    return *o;
  };
  cmd->callback([&global, &run, with_global, check_config, shm, claim] {
    // `claim` set `run` itself; the resource daemon's flags do not apply to it.
    if (claim->parsed()) return;
    if (shm->parsed()) {
      run = [with_global] { return Report(plugin::MountMpsControlDaemonShm(with_global())); };
    } else if (*check_config) {
      run = [&global, with_global] {
        core::SystemEnv env(global.host_root);
        absl::StatusOr<std::vector<std::string>> lines =
            plugin::CheckMpsControlDaemonConfig(with_global(), env);
        if (!lines.ok()) return ReportError(lines.status());
        for (const std::string& line : *lines) std::cout << line << "\n";
        return kExitOk;
      };
    } else {
      run = [&global, with_global] {
        core::SystemEnv env(global.host_root);
        return Report(plugin::RunMpsControlDaemon(with_global(), env));
      };
    }
  });
}

}  // namespace gpunode::cli
