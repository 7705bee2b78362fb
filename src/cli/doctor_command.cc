#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/nvml_session.h"
#include "core/host_root.h"
#include "doctor/doctor.h"
#include "doctor/report.h"

namespace gpunode::cli {
namespace {

struct DoctorFlags {
  std::string output = "table";
  std::string cuda;
  bool in_container = false;
  std::string kubelet_root_dir = "/var/lib/kubelet";
  std::optional<std::string> device_plugin_dir;  // --kubelet-dir, the device plugin's flag
  std::string containerd_config = "/etc/containerd/config.toml";
  std::string containerd_socket;
  std::optional<std::string> mps_root;
  std::string cdi_root = "/var/run/cdi";
};

std::optional<std::string> Environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

int RunDoctor(const GlobalOptions& global, const DoctorFlags& flags) {
  if (flags.device_plugin_dir) {
    return ReportError(absl::InvalidArgumentError(
        "--kubelet-dir is the device plugin's device-plugins directory; doctor takes the "
        "kubelet's root (its --root-dir, default /var/lib/kubelet) as --kubelet-root-dir"));
  }
  doctor::DoctorOptions options;
  if (!flags.cuda.empty()) {
    absl::StatusOr<doctor::CudaVersion> cuda = doctor::ParseCudaVersion(flags.cuda);
    if (!cuda.ok()) return ReportError(cuda.status());
    options.cuda = *cuda;
  }
  options.in_container = flags.in_container;
  options.kubelet_dir = flags.kubelet_root_dir;
  options.containerd_config = flags.containerd_config;
  options.containerd_socket = flags.containerd_socket;
  options.cdi_root = flags.cdi_root;
  if (flags.mps_root) {
    options.mps_root = *flags.mps_root;
  } else if (std::optional<std::string> root = Environment("MPS_ROOT"); root && !root->empty()) {
    options.mps_root = *root;
  }
  if (flags.in_container) {
    options.visible_devices = Environment("NVIDIA_VISIBLE_DEVICES");
    options.driver_capabilities = Environment("NVIDIA_DRIVER_CAPABILITIES");
    options.image_cuda_version = Environment("CUDA_VERSION");
    options.image_cudart_version = Environment("NV_CUDA_CUDART_VERSION");
  }

  // NVML failing is a finding (driver.nvml), not the end of the run; a bad --sim SPEC is still
  // a usage error.
  absl::StatusOr<std::unique_ptr<nvml::Library>> library = OpenNvml(global);
  if (!library.ok() && !global.sim.empty() && absl::IsInvalidArgument(library.status())) {
    return ReportError(library.status());
  }
  core::HostRoot host(global.host_root);
  doctor::Context context(host, library.ok() ? library->get() : nullptr,
                          library.ok() ? absl::OkStatus() : library.status(), std::move(options));
  std::vector<doctor::Finding> findings = doctor::RunDoctor(context);
  if (flags.output == "json") {
    std::cout << doctor::RenderJson(findings).dump(2) << "\n";
  } else {
    std::cout << doctor::RenderTable(findings, ::isatty(STDOUT_FILENO) == 1);
  }
  return doctor::Summarize(findings).fail == 0 ? kExitOk : kExitFailures;
}

}  // namespace

void AddDoctorCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run) {
  auto flags = std::make_shared<DoctorFlags>();
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "check every layer of this GPU node (pci, driver, runtime, plugin, kubelet) and "
      "name the broken one; with --in-container, what a pod sees");
  cmd->add_option("-o,--output", flags->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->add_option("--cuda", flags->cuda,
                  "the CUDA version the workloads need, e.g. 12.4 (checks the driver against it)");
  cmd->add_flag("--in-container", flags->in_container,
                "run inside a pod: check the GPUs, device nodes, driver libraries and CUDA the "
                "container sees (host-only checks are left out)");
  cmd->add_option("--kubelet-root-dir", flags->kubelet_root_dir,
                  "the kubelet's root directory (its --root-dir)")
      ->capture_default_str();
  // Not listed: the device plugin's flag, refused here with the one to use.
  cmd->add_option("--kubelet-dir", flags->device_plugin_dir)->group("");
  cmd->add_option("--mps-root", flags->mps_root,
                  "the MPS control daemons' root (env MPS_ROOT; default /run/nvidia/mps)");
  cmd->add_option("--cdi-root", flags->cdi_root,
                  "where the DRA plugin writes its claims' CDI specs (its --cdi-root)")
      ->capture_default_str();
  cmd->add_option("--containerd-config", flags->containerd_config, "containerd's config file")
      ->capture_default_str();
  cmd->add_option("--containerd-socket", flags->containerd_socket,
                  "containerd's CRI socket (default /run/containerd/containerd.sock under "
                  "--host-root)");
  cmd->callback(
      [&global, &run, flags] { run = [&global, flags] { return RunDoctor(global, *flags); }; });
}

}  // namespace gpunode::cli
