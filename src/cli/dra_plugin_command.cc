// `gpunode dra-plugin`: the kubelet DRA plugin for NVIDIA GPUs, with the flags and environment of
// NVIDIA's gpu-kubelet-plugin (kubernetes-sigs/dra-driver-nvidia-gpu, cmd/gpu-kubelet-plugin).

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/nvml_session.h"
#include "cli/report_error.h"
#include "core/duration.h"
#include "core/system_env.h"
#include "dra/dra_plugin.h"
#include "dra/resource_slice.h"
#include "gpu/dra_devices.h"
#include "kube/kubeconfig.h"
#include "plugin_config/sources.h"
#include "spdlog/spdlog.h"

namespace gpunode::cli {
namespace {

struct DraPluginFlags {
  std::string node_name;
  std::string kubelet_dir = "/var/lib/kubelet";
  std::string registrar_dir;  // default <kubelet-dir>/plugins_registry
  std::string plugins_dir;    // default <kubelet-dir>/plugins
  std::string device_plugins_dir;
  std::string cdi_root = "/var/run/cdi";
  std::string nvidia_driver_root;
  std::string dev_root;
  std::string cdi_hook_path = "/usr/bin/nvidia-cdi-hook";
  std::string rescan_interval = "30s";
  std::string nvidia_smi = "nvidia-smi";
  std::string name_space = "gpunode-system";
  std::string image_name;
  std::optional<std::string> health_recovery_period;
  std::optional<std::string> health_flap_limit;
  bool dry_run = false;
};

// The value of a flag left at its default from NVIDIA's environment variable, as its plugin
// reads them (urfave/cli's EnvVars).
void FromEnvironment(std::string& value, const CLI::App& cmd, const char* flag, const char* env) {
  const char* set = std::getenv(env);
  if (set != nullptr && *set != '\0' && cmd.get_option(flag)->count() == 0) value = set;
}

int DryRun(const GlobalOptions& global, const DraPluginFlags& flags) {
  absl::StatusOr<std::unique_ptr<nvml::Library>> library = OpenNvml(global);
  if (!library.ok()) return ReportError(library.status());
  core::HostRoot host(global.host_root);
  absl::StatusOr<gpu::DraNode> node = gpu::ReadDraNode(**library, host);
  if (!node.ok()) return ReportError(node.status());
  std::string name = flags.node_name.empty() ? "NODE" : flags.node_name;
  std::cout << dra::RenderSlicesYaml(dra::BuildResourceSlices({name, ""}, node->devices, 1));
  return kExitOk;
}

int RunDraPlugin(const GlobalOptions& global, const DraPluginFlags& flags) {
  if (flags.dry_run) return DryRun(global, flags);
  if (flags.node_name.empty()) {
    return ReportError(absl::InvalidArgumentError(
        "--node-name: not set; set it (or NODE_NAME) from the pod's spec.nodeName"));
  }
  absl::StatusOr<absl::Duration> rescan = core::ParseDuration(
      "--rescan-interval", flags.rescan_interval, {.min = absl::Seconds(1), .max = absl::Hours(1)});
  if (!rescan.ok()) return ReportError(rescan.status());
  absl::StatusOr<plugin_config::ProcessSettings> process =
      plugin_config::ResolveProcessSettings({.health_recovery_period = flags.health_recovery_period,
                                             .health_flap_limit = flags.health_flap_limit},
                                            &plugin_config::ProcessEnvironment);
  if (!process.ok()) return ReportError(process.status());
  absl::StatusOr<health::HealthOptions> health = plugin_config::HealthOptionsFrom(*process);
  if (!health.ok()) return ReportError(health.status());
  core::SystemEnv env(global.host_root);
  // Before any thread starts, so that they all leave the stop signals to the Env.
  if (absl::Status st = env.StopOnSignals(); !st.ok()) return ReportError(st);

  absl::StatusOr<kube::ClusterAccess> access = kube::ResolveAccess(kube::SourcesFromEnvironment());
  if (absl::IsNotFound(access.status())) {
    access =
        AppendHint(access.status(), "run it in a pod with a service account, or set KUBECONFIG");
  }
  if (!access.ok()) return ReportError(access.status());
  absl::StatusOr<std::unique_ptr<kube::Client>> slices =
      kube::NewNodeClient(*access, kube::TransportOptions{}, env);
  absl::StatusOr<std::unique_ptr<kube::Client>> claims =
      kube::NewNodeClient(*access, kube::TransportOptions{}, env);
  if (!slices.ok()) return ReportError(slices.status());
  if (!claims.ok()) return ReportError(claims.status());

  GlobalOptions nvml_options = global;
  if (nvml_options.driver_root == "/" && !flags.nvidia_driver_root.empty()) {
    nvml_options.driver_root = flags.nvidia_driver_root;
  }
  absl::StatusOr<std::unique_ptr<nvml::Library>> library = OpenNvml(nvml_options);
  if (!library.ok()) return ReportError(library.status());
  spdlog::info("NVML initialized from {}", (*library)->path());

  dra::DraPluginOptions options;
  options.node_name = flags.node_name;
  options.registrar_dir = flags.registrar_dir.empty()
                              ? absl::StrCat(flags.kubelet_dir, "/plugins_registry")
                              : flags.registrar_dir;
  options.plugins_dir =
      flags.plugins_dir.empty() ? absl::StrCat(flags.kubelet_dir, "/plugins") : flags.plugins_dir;
  options.device_plugins_dir = flags.device_plugins_dir.empty()
                                   ? absl::StrCat(flags.kubelet_dir, "/device-plugins")
                                   : flags.device_plugins_dir;
  options.cdi_root = flags.cdi_root;
  options.driver_root = nvml_options.driver_root;
  options.dev_root = flags.dev_root.empty() ? options.driver_root : flags.dev_root;
  options.hook_path = flags.cdi_hook_path;
  options.rescan_interval = *rescan;
  options.nvidia_smi = flags.nvidia_smi;
  options.health = *std::move(health);
  options.name_space = flags.name_space;
  options.mps_image = flags.image_name;
  // A claim's MPS daemon sees the GPUs this plugin sees: the same simulated node, driver root
  // and logging.
  if (!global.sim.empty()) options.mps_global_args = {"--sim", global.sim};
  if (!global.sim_topology.empty()) {
    options.mps_global_args.insert(options.mps_global_args.end(),
                                   {"--sim-topology", global.sim_topology});
  }
  if (options.driver_root != "/") {
    options.mps_global_args.insert(options.mps_global_args.end(),
                                   {"--driver-root", options.driver_root});
  }
  options.mps_global_args.insert(
      options.mps_global_args.end(),
      {"--log-level", global.log_level.empty() ? "info" : global.log_level});

  absl::Status st = dra::RunDraPlugin(**library, {**slices, **claims}, options, env);
  if (!st.ok()) return ReportError(st);
  return kExitOk;
}

}  // namespace

void AddDraPluginCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run) {
  auto flags = std::make_shared<DraPluginFlags>();
  CLI::App* cmd = app.add_subcommand(
      "dra-plugin",
      "kubelet DRA plugin for NVIDIA GPUs (driver gpu.nvidia.com), a drop-in for NVIDIA's "
      "gpu-kubelet-plugin");
  cmd->add_option("--node-name", flags->node_name, "this node's name (env NODE_NAME)");
  cmd->add_option("--kubelet-dir", flags->kubelet_dir, "the kubelet's root directory")
      ->capture_default_str();
  cmd->add_option("--kubelet-registrar-directory-path", flags->registrar_dir,
                  "where the kubelet watches for plugin registration sockets (env "
                  "KUBELET_REGISTRAR_DIRECTORY_PATH; default <kubelet-dir>/plugins_registry)");
  cmd->add_option("--kubelet-plugins-directory-path", flags->plugins_dir,
                  "where the plugin's socket and checkpoint live, under gpu.nvidia.com/ (env "
                  "KUBELET_PLUGINS_DIRECTORY_PATH; default <kubelet-dir>/plugins)");
  cmd->add_option("--device-plugins-directory-path", flags->device_plugins_dir,
                  "the kubelet's device-plugins directory, checked for a device plugin serving "
                  "the same GPUs (default <kubelet-dir>/device-plugins)");
  cmd->add_option("--cdi-root", flags->cdi_root,
                  "where the claims' CDI specs are written (env CDI_ROOT)")
      ->capture_default_str();
  cmd->add_option("--nvidia-driver-root", flags->nvidia_driver_root,
                  "root of the NVIDIA driver installation (env NVIDIA_DRIVER_ROOT; default /)");
  cmd->add_option("--dev-root", flags->dev_root,
                  "prefix of the device nodes' host paths (env NVIDIA_DEV_ROOT; default the "
                  "driver root)");
  cmd->add_option("--nvidia-cdi-hook-path", flags->cdi_hook_path,
                  "nvidia-cdi-hook on the host, named by the CDI specs' hooks; \"\" for none "
                  "(env NVIDIA_CDI_HOOK_PATH)")
      ->capture_default_str();
  cmd->add_option("--nvidia-smi-path", flags->nvidia_smi,
                  "nvidia-smi, which sets the time-slice interval a claim's GpuConfig asks for "
                  "(compute-policy --set-timeslice); a path, or a name looked up on PATH (env "
                  "NVIDIA_SMI_PATH)")
      ->capture_default_str();
  cmd->add_option("--namespace", flags->name_space,
                  "the plugin's namespace, where the Deployments of the claims' MPS control "
                  "daemons go (env NAMESPACE)")
      ->capture_default_str();
  cmd->add_option("--image-name", flags->image_name,
                  "the image of the claims' MPS control daemons: gpunode's (env IMAGE_NAME); "
                  "without it a claim that asks for MPS fails to prepare");
  cmd->add_option("--rescan-interval", flags->rescan_interval,
                  "how often the devices are read again and the ResourceSlice updated when they "
                  "changed")
      ->capture_default_str();
  cmd->add_option("--health-recovery-period", flags->health_recovery_period,
                  "a tainted device is untainted after the monitor saw the evidence that its fault "
                  "is gone for this long without a new XID; 0 = never (env "
                  "HEALTH_RECOVERY_PERIOD; default 60s)");
  cmd->add_option("--health-flap-limit", flags->health_flap_limit,
                  "a GPU that becomes Unhealthy more often than this within an hour stays tainted "
                  "until the plugin restarts (env HEALTH_FLAP_LIMIT; default 3; 0 = no limit)");
  cmd->add_flag("--dry-run", flags->dry_run,
                "print the ResourceSlices the plugin would publish for this node (YAML) and exit");
  cmd->callback([&global, &run, flags, cmd] {
    FromEnvironment(flags->node_name, *cmd, "--node-name", "NODE_NAME");
    FromEnvironment(flags->registrar_dir, *cmd, "--kubelet-registrar-directory-path",
                    "KUBELET_REGISTRAR_DIRECTORY_PATH");
    FromEnvironment(flags->plugins_dir, *cmd, "--kubelet-plugins-directory-path",
                    "KUBELET_PLUGINS_DIRECTORY_PATH");
    FromEnvironment(flags->cdi_root, *cmd, "--cdi-root", "CDI_ROOT");
    FromEnvironment(flags->nvidia_driver_root, *cmd, "--nvidia-driver-root", "NVIDIA_DRIVER_ROOT");
    FromEnvironment(flags->dev_root, *cmd, "--dev-root", "NVIDIA_DEV_ROOT");
    FromEnvironment(flags->cdi_hook_path, *cmd, "--nvidia-cdi-hook-path", "NVIDIA_CDI_HOOK_PATH");
    FromEnvironment(flags->nvidia_smi, *cmd, "--nvidia-smi-path", "NVIDIA_SMI_PATH");
    FromEnvironment(flags->name_space, *cmd, "--namespace", "NAMESPACE");
    FromEnvironment(flags->image_name, *cmd, "--image-name", "IMAGE_NAME");
    run = [&global, flags] { return RunDraPlugin(global, *flags); };
  });
}

}  // namespace gpunode::cli
