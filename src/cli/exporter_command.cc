// `gpunode exporter`: dcgm-exporter-compatible GPU metrics with pod attribution and zombie GPU
// processes, served over plain HTTP or printed once.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli/command.h"
#include "cli/nvml_session.h"
#include "core/duration.h"
#include "core/system_env.h"
#include "metrics/listen_address.h"
#include "metrics/run.h"

namespace gpunode::cli {
namespace {

struct ExporterOptions {
  std::string listen = ":9400";
  std::string interval = "1s";
  bool once = false;
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::string hostname;
  bool kubernetes_enable_dra = false;
};

// dcgm-exporter's rule: NODE_NAME (set from spec.nodeName), else the host name.
std::string DefaultHostname() {
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr && *node != '\0') return node;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

int RunExporter(const GlobalOptions& global, const ExporterOptions& options) {
  metrics::RunOptions run;
  absl::StatusOr<absl::Duration> interval = core::ParseDuration(
      "--interval", options.interval, {absl::Milliseconds(100), absl::Hours(1)});
  if (!interval.ok()) return ReportError(interval.status());
  run.interval = *interval;
  absl::StatusOr<metrics::ListenAddress> address = metrics::ParseListenAddress(options.listen);
  if (!address.ok()) return ReportError(address.status());
  run.listen = *address;
  run.once = options.once;
  run.pod_resources_socket = options.pod_resources_socket;
  run.hostname = options.hostname.empty() ? DefaultHostname() : options.hostname;
  run.dra_labels = options.kubernetes_enable_dra;

  core::SystemEnv env(global.host_root);
  if (absl::Status st = env.StopOnSignals(); !st.ok()) return ReportError(st);
  absl::StatusOr<std::unique_ptr<nvml::Library>> library = OpenNvml(global);
  if (!library.ok()) return ReportError(library.status());
  absl::Status st = metrics::Run(run, **library, env, std::cout);
  return st.ok() ? kExitOk : ReportError(st);
}

}  // namespace

void AddExporterCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run) {
  auto options = std::make_shared<ExporterOptions>();
  CLI::App* cmd = app.add_subcommand(
      "exporter",
      "serve GPU metrics (dcgm-exporter names and labels) with pod attribution and zombie GPU "
      "processes on /metrics. The DCGM_FI_PROF_* profiling series come from NVML's GPM and "
      "exist only on Hopper and later GPUs (driver 520+); before Hopper they need DCGM's "
      "profiling module and are left out, never reported as 0.");
  cmd->add_option("--listen", options->listen, "[HOST]:PORT to serve /metrics and /healthz on")
      ->capture_default_str();
  cmd->add_option("--interval", options->interval,
                  "how often to sample NVML and the kubelet (100ms to 1h)")
      ->capture_default_str();
  cmd->add_flag("--once", options->once,
                "print one scrape to stdout and exit (for node_exporter's textfile collector)");
  cmd->add_option("--pod-resources-socket", options->pod_resources_socket,
                  "the kubelet's PodResources socket, under --host-root; \"\" turns pod "
                  "attribution and zombie detection off")
      ->capture_default_str();
  cmd->add_option("--hostname", options->hostname,
                  "value of the Hostname label (default: $NODE_NAME, else the host name)");
  cmd->add_flag("--kubernetes-enable-dra", options->kubernetes_enable_dra,
                "label devices held through ResourceClaims with dcgm-exporter's dra_claim_name, "
                "dra_claim_namespace, dra_device_name, dra_driver_name, dra_pool_name (and "
                "dra_mig_profile, dra_mig_device_uuid); their pods are attributed either way "
                "(env KUBERNETES_ENABLE_DRA)")
      ->envname("KUBERNETES_ENABLE_DRA");
  cmd->callback([&global, &run, options] {
    run = [&global, options] { return RunExporter(global, *options); };
  });
}

}  // namespace gpunode::cli
