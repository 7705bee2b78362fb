// Running a kubeconfig's credential plugin (client-go's exec protocol) and reading the
// ExecCredential it prints.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kube/kubeconfig.h"

namespace gpunode::kube {

struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<absl::Time> expires;  // none: valid for the life of the process
};

// Parses the plugin's stdout: an ExecCredential of `api_version` with status.token, or
// status.clientCertificateData and clientKeyData, and an optional expirationTimestamp.
absl::StatusOr<ExecCredential> ParseExecCredential(std::string_view json,
                                                   std::string_view api_version);

// Runs the plugin non-interactively (stdin is /dev/null, stderr is gpunode's) with
// KUBERNETES_EXEC_INFO set, and parses what it prints. `cluster` fills spec.cluster when the
// plugin asks for it. A plugin that runs past `timeout` is killed. Errors name the plugin, its
// user in the kubeconfig and the plugin's install hint.
absl::StatusOr<ExecCredential> RunExecPlugin(const ExecPlugin& plugin, const ClusterAccess& cluster,
                                             absl::Duration timeout);

}  // namespace gpunode::kube
