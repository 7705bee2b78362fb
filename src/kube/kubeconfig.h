// How to reach and authenticate to the API server: from kubeconfig files (kubectl's rules) or the
// in-cluster service account.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::kube {

// A client-go credential plugin (users[].user.exec, as `aws eks get-token` or
// gke-gcloud-auth-plugin): a command that prints an ExecCredential with a token or a client
// certificate. It is run when a request first needs credentials and again when they expire.
struct ExecPlugin {
  std::string command;  // as written; a relative path with a '/' is resolved against the kubeconfig
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // added to gpunode's environment
  std::string api_version;  // client.authentication.k8s.io/v1 or v1beta1
  std::string install_hint;
  bool provide_cluster_info = false;
  std::string where;  // "user eks in /root/.kube/config": for messages
};

// Everything the HTTP client needs. Secrets live only here and in request headers; nothing
// prints them (see Describe()).
struct ClusterAccess {
  std::string server;  // https://host:port, without a trailing slash
  std::string ca_pem;  // empty: the system trust store
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;
  // Re-read periodically: projected service-account tokens rotate while a process runs.
  std::string token_file;
  std::string username;
  std::string password;
  std::optional<ExecPlugin> exec;  // credentials come from this plugin when set
  std::string default_namespace = "default";
  // "context prod in /root/.kube/config" or "in-cluster service account": for messages.
  std::string description;
};

// The inputs kubectl looks at, gathered by the caller so tests can substitute them.
struct AccessSources {
  std::string kubeconfig_flag;  // --kubeconfig
  std::string context;          // --context
  std::string kubeconfig_env;   // $KUBECONFIG: paths joined by ':'
  std::string home;             // $HOME, for ~/.kube/config
  std::string service_host;     // $KUBERNETES_SERVICE_HOST
  std::string service_port;     // $KUBERNETES_SERVICE_PORT
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// Reads the process environment into AccessSources (the flags stay empty).
AccessSources SourcesFromEnvironment();

// kubectl's order: --kubeconfig, else $KUBECONFIG (files merged, the first to set a value wins),
// else ~/.kube/config if present, else the in-cluster service account when running in a pod.
absl::StatusOr<ClusterAccess> ResolveAccess(const AccessSources& sources);

// Parses kubeconfig files already read into memory ({path, text} pairs, merged in order) and
// selects `context` (or current-context). Paths inside are resolved against each file's directory.
struct KubeconfigText {
  std::string path;
  std::string text;
};
absl::StatusOr<ClusterAccess> ParseKubeconfig(const std::vector<KubeconfigText>& files,
                                              std::string_view context);

// The pod's own service account: token, CA and namespace from `service_account_dir`.
absl::StatusOr<ClusterAccess> InClusterAccess(const AccessSources& sources);

}  // namespace gpunode::kube
