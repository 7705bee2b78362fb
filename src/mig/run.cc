#include "mig/run.h"

#include <poll.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "core/duration.h"
#include "core/log.h"
#include "core/status_macros.h"
#include "core/status_text.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/node_label_watch.h"
#include "mig/mig_config.h"
#include "mig/mig_manager.h"
#include "spdlog/spdlog.h"

namespace gpunode::mig {

absl::Status Run(const RunOptions& options, core::Env& env) {
  ASSIGN_OR_RETURN(
      absl::Duration client_timeout,
      core::ParseDuration("--client-timeout", options.client_timeout, {.min = absl::Seconds(1)}));
  if (options.node.empty()) {
    return absl::InvalidArgumentError(
        "mig manager: no node; set --node or NODE_NAME (from spec.nodeName in the DaemonSet)");
  }
  // The file is read now to refuse a bad one at start, and again for every change.
  RETURN_IF_ERROR(ReadMigConfig(options.config_file).status());
  ASSIGN_OR_RETURN(std::unique_ptr<nvml::Library> library, options.open_nvml(options.driver_root));
  absl::StatusOr<kube::ClusterAccess> access = kube::ResolveAccess(kube::SourcesFromEnvironment());
  if (absl::IsNotFound(access.status())) {
    // The manager has no --kubeconfig: it runs as a DaemonSet with a service account.
    return core::AppendHint(access.status(),
                            "run it in a pod with a service account (deploy/mig-manager/), "
                            "or set KUBECONFIG");
  }
  if (!access.ok()) return access.status();
  // The watch thread owns one client; the labels are patched and the pods listed through the
  // other.
  ASSIGN_OR_RETURN(std::unique_ptr<kube::Client> watch_client,
                   kube::NewNodeClient(*access, kube::TransportOptions{}, env));
  ASSIGN_OR_RETURN(std::unique_ptr<kube::Client> client,
                   kube::NewNodeClient(*access, kube::TransportOptions{}, env));
  ASSIGN_OR_RETURN(
      std::unique_ptr<kube::NodeLabelWatch> watch,
      kube::NodeLabelWatch::Start(std::move(watch_client), options.node, kMigConfigLabel));
  // A stop that comes during a change ends its wait for the clients (which are resumed) and
  // then the loop.
  MigManager manager(*library, *client,
                     ManagerOptions{.node = options.node,
                                    .config_file = options.config_file,
                                    .client_labels = options.client_labels,
                                    .client_selectors = options.client_selectors,
                                    .client_timeout = client_timeout,
                                    .force = options.force},
                     env);
  spdlog::info("mig manager: node {}, label {}, config file {}, clients {} ({}), timeout {}",
               options.node, kMigConfigLabel, options.config_file,
               absl::StrJoin(options.client_labels, ", "),
               absl::StrJoin(options.client_selectors, ", "), absl::FormatDuration(client_timeout));
  if (!watch->WaitForFirstRead(absl::Seconds(30))) {
    spdlog::warn("node {}: not read yet ({}); waiting for the label", options.node,
                 watch->LastError());
  }
  std::optional<std::string> done;  // the layout last reconciled
  while (!env.StopRequested()) {
    watch->Clear();
    std::optional<std::string> wanted = watch->Value();
    if (wanted && !wanted->empty() && wanted != done) {
      manager.Reconcile(*wanted).IgnoreError();  // logged, and said by the state label
      done = wanted;
      continue;  // the label may have changed meanwhile
    }
    struct pollfd fds[2] = {{env.stop_fd(), POLLIN, 0}, {watch->fd(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
    }
  }
  spdlog::info("received signal {}; stopping", env.stop_signal());
  return absl::OkStatus();
}

}  // namespace gpunode::mig
