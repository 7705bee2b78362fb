#include "cli/cluster_flags.h"

#include "absl/strings/str_split.h"
#include "cli/report_error.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "core/text.h"

namespace gpunode::cli {

void AddConnectionOptions(CLI::App* cmd, ConnectionOptions& o, ConnectionFlags flags) {
  if (flags.snapshot) {
    cmd->add_option("-f,--filename", o.snapshot,
                    core::StrCat(flags.snapshot_needs_dry_run ? "with --dry-run only: " : "",
                                 "read a snapshot (what `kubectl get nodes,pods -A -o json` "
                                 "prints; - for stdin) instead of the API server"));
  }
  cmd->add_option("--kubeconfig", o.kubeconfig,
                  "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster "
                  "service account)");
  cmd->add_option("--context", o.context, "kubeconfig context (default: current-context)");
  cmd->add_option("--request-timeout", o.request_timeout,
                  "timeout of each API request, e.g. 30s or 2m")
      ->capture_default_str();
  if (flags.output) {
    cmd->add_option("-o,--output", o.output, "table or json")
        ->check(CLI::IsMember({"table", "json"}))
        ->capture_default_str();
  }
}

// The operator's own GPU count label, named as `gpunode labels --stable-labels` names it.
void AddCountLabelOptions(CLI::App* cmd, cluster::CountLabel& label) {
  cmd->add_option("--count-label", label.key,
                  "your own node label holding the physical GPU count; read instead of "
                  "nvidia.com/gpu.count when present (a disagreement is a finding)")
      ->capture_default_str();
  cmd->add_option("--stable-label-prefix", label.prefix,
                  "prefix of --count-label, as given to `gpunode labels` (default none: the "
                  "bare key, or NFD's feature.node.kubernetes.io/ one)");
}

absl::StatusOr<Connection> Connect(const ConnectionOptions& o, core::Env& env) {
  kube::AccessSources sources = kube::SourcesFromEnvironment();
  sources.kubeconfig_flag = o.kubeconfig;
  sources.context = o.context;
  // The flag first: a bad value is reported whether or not the kubeconfig is found.
  kube::TransportOptions transport;
  ASSIGN_OR_RETURN(transport.request_timeout,
                   core::ParseDuration("--request-timeout", o.request_timeout));
  Connection c;
  absl::StatusOr<kube::ClusterAccess> access = kube::ResolveAccess(sources);
  if (absl::IsNotFound(access.status())) {
    return AppendHint(access.status(), "give --kubeconfig FILE, or read a snapshot with -f FILE");
  }
  ASSIGN_OR_RETURN(c.access, std::move(access));
  ASSIGN_OR_RETURN(c.client, kube::NewClient(c.access, transport, env));
  return c;
}

absl::Status FromCluster(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      return AsInputError(status);
    default:
      return status;
  }
}

// A snapshot file is what the user named: any problem reading it is an input error.
absl::Status FromSnapshotOrCluster(const ConnectionOptions& o, const absl::Status& status) {
  return o.snapshot.empty() ? FromCluster(status) : AsInputError(status);
}

void AddSmokePodOptions(CLI::App* cmd, VerifyFlags& f) {
  cmd->add_option("-n,--namespace", f.verify.ns,
                  "namespace of the smoke pod (default: the context's)");
  cmd->add_option("--image", f.verify.image,
                  "the smoke pod's image; gpunode's own runs `gpunode doctor --in-container -o "
                  "json`, any other its entrypoint (or --command)")
      ->capture_default_str();
  cmd->add_option("--command", f.command, "the smoke pod's command, split at spaces");
  cmd->add_option("--workload-image", f.verify.workload_image,
                  "a GPU workload run after the smoke pod passed, in a pod of its own with the "
                  "same GPUs (e.g. nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0); its "
                  "exit code and log are part of the verdict");
  cmd->add_option("--workload-command", f.workload_command,
                  "the workload's command, split at spaces (default: the image's entrypoint)");
  cmd->add_option("--runtime-class", f.verify.runtime_class,
                  "runtimeClassName of the smoke pod (e.g. nvidia; default: none)");
  cmd->add_option("--require-label", f.verify.require_labels,
                  "a label KEY or KEY=VALUE every node must carry (repeatable; e.g. "
                  "hardware-type=gpu)")
      ->allow_extra_args(false);
  cmd->add_option("--device-plugin", f.verify.device_plugin,
                  "NAMESPACE/NAME of the device plugin DaemonSet (default: found by name)");
  cmd->add_option(f.timeout_flag, f.timeout, "how long a smoke pod may take, image pull included")
      ->capture_default_str();
  cmd->add_option(f.poll_interval_flag, f.poll_interval, "how often to look at the smoke pod")
      ->capture_default_str();
}

// Completes the options from the flags, before connecting, so that a bad flag is reported
// first; the namespace comes from the context after (UseContextNamespace).
absl::Status VerifyOptionsFromFlags(VerifyFlags& f) {
  cluster::VerifyOptions& v = f.verify;
  ASSIGN_OR_RETURN(v.timeout, core::ParseDuration(f.timeout_flag, f.timeout));
  ASSIGN_OR_RETURN(v.poll_interval, core::ParseDuration(f.poll_interval_flag, f.poll_interval));
  if (v.poll_interval <= absl::ZeroDuration()) v.poll_interval = absl::Milliseconds(100);
  for (absl::string_view word : absl::StrSplit(f.command, ' ', absl::SkipEmpty())) {
    v.command.emplace_back(word);
  }
  for (absl::string_view word : absl::StrSplit(f.workload_command, ' ', absl::SkipEmpty())) {
    v.workload_command.emplace_back(word);
  }
  if (!v.workload_command.empty() && v.workload_image.empty()) {
    return absl::InvalidArgumentError(
        "--workload-command: given without --workload-image; name the workload's image too");
  }
  if (!v.device_plugin.empty() && v.device_plugin.find('/') == std::string::npos) {
    return absl::InvalidArgumentError(core::StrCat("--device-plugin ", v.device_plugin,
                                                   ": use NAMESPACE/NAME, e.g. gpu-operator/"
                                                   "nvidia-device-plugin-daemonset"));
  }
  return absl::OkStatus();
}

void UseContextNamespace(VerifyFlags& f, const Connection& c) {
  if (f.verify.ns.empty()) f.verify.ns = c.access.default_namespace;
}

}  // namespace gpunode::cli
