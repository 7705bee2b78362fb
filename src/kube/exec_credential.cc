#include "kube/exec_credential.h"

#include <vector>

#include "absl/strings/escaping.h"
#include "core/json_field.h"
#include "core/spawn.h"
#include "core/text.h"
#include "nlohmann/json.hpp"

namespace gpunode::kube {
namespace {

using json = nlohmann::json;
using core::StrCat;

// Credentials are a few kilobytes; anything far larger is not an ExecCredential.
constexpr size_t kMaxOutput = 1 << 20;

std::string ExecInfo(const ExecPlugin& plugin, const ClusterAccess& cluster) {
  json spec = {{"interactive", false}};
  if (plugin.provide_cluster_info) {
    json c = {{"server", cluster.server}};
    if (!cluster.ca_pem.empty())
      c["certificate-authority-data"] = absl::Base64Escape(cluster.ca_pem);
    if (cluster.insecure_skip_tls_verify) c["insecure-skip-tls-verify"] = true;
    if (!cluster.tls_server_name.empty()) c["tls-server-name"] = cluster.tls_server_name;
    spec["cluster"] = std::move(c);
  }
  return json{{"apiVersion", plugin.api_version}, {"kind", "ExecCredential"}, {"spec", spec}}
      .dump();
}

// The plugin's variables and KUBERNETES_EXEC_INFO, set over gpunode's own environment.
std::vector<std::string> PluginEnvironment(const ExecPlugin& plugin, const std::string& info) {
  std::vector<std::string> out;
  for (const auto& [name, value] : plugin.env) out.push_back(StrCat(name, "=", value));
  out.push_back(StrCat("KUBERNETES_EXEC_INFO=", info));
  return out;
}

std::string Hint(const ExecPlugin& plugin) {
  return plugin.install_hint.empty() ? "" : StrCat("; ", plugin.install_hint);
}

}  // namespace

absl::StatusOr<ExecCredential> ParseExecCredential(std::string_view text,
                                                   std::string_view api_version) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("its output is not a JSON ExecCredential");
  }
  if (core::JsonString(doc, "kind") != "ExecCredential" ||
      core::JsonString(doc, "apiVersion") != api_version) {
    return absl::InvalidArgumentError(StrCat("its output is not an ExecCredential of ",
                                             std::string(api_version), " (kind \"",
                                             core::JsonString(doc, "kind"), "\", apiVersion \"",
                                             core::JsonString(doc, "apiVersion"), "\")"));
  }
  auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) {
    return absl::InvalidArgumentError("its ExecCredential has no status");
  }
  ExecCredential credential;
  credential.token = core::JsonString(*status, "token");
  credential.client_cert_pem = core::JsonString(*status, "clientCertificateData");
  credential.client_key_pem = core::JsonString(*status, "clientKeyData");
  if (credential.client_cert_pem.empty() != credential.client_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "its ExecCredential has a client certificate or a key but not both");
  }
  if (credential.token.empty() && credential.client_cert_pem.empty()) {
    return absl::InvalidArgumentError(
        "its ExecCredential has neither status.token nor status.clientCertificateData");
  }
  if (std::string expiry = core::JsonString(*status, "expirationTimestamp"); !expiry.empty()) {
    absl::Time at;
    std::string error;
    if (!absl::ParseTime(absl::RFC3339_full, expiry, &at, &error)) {
      return absl::InvalidArgumentError(
          StrCat("its status.expirationTimestamp \"", expiry, "\" is not RFC 3339: ", error));
    }
    credential.expires = at;
  }
  return credential;
}

absl::StatusOr<ExecCredential> RunExecPlugin(const ExecPlugin& plugin, const ClusterAccess& cluster,
                                             absl::Duration timeout) {
  std::string what = StrCat("credential plugin \"", plugin.command, "\" of ", plugin.where);
  core::SpawnOptions spawn{.argv = {plugin.command},
                           .env = PluginEnvironment(plugin, ExecInfo(plugin, cluster))};
  spawn.argv.insert(spawn.argv.end(), plugin.args.begin(), plugin.args.end());
  // Its stderr is the user's: a plugin says there why it failed, or what it waits for.
  spawn.stderr_to = core::SpawnOptions::Stream::kInherit;
  spawn.timeout = absl::ToChronoMilliseconds(timeout);
  spawn.max_output = kMaxOutput;
  absl::StatusOr<core::SpawnResult> result = core::Spawn(spawn);
  if (!result.ok()) {
    return absl::FailedPreconditionError(
        StrCat(what, ": cannot run it: ", result.status().message(), Hint(plugin)));
  }
  if (result->end == core::SpawnResult::End::kTimedOut) {
    return absl::DeadlineExceededError(StrCat(what, ": gave no credentials within ",
                                              absl::FormatDuration(timeout),
                                              "; run it by hand to see what it waits for"));
  }
  if (result->end == core::SpawnResult::End::kOutputTooLong) {
    return absl::InvalidArgumentError(StrCat(what, ": printed more than 1 MiB"));
  }
  if (!result->Succeeded()) {
    return absl::UnauthenticatedError(
        StrCat(what, ": ", result->Describe(), " (its messages are above)", Hint(plugin)));
  }
  const std::string& output = result->output;
  absl::StatusOr<ExecCredential> credential = ParseExecCredential(output, plugin.api_version);
  if (!credential.ok()) {
    return absl::InvalidArgumentError(StrCat(what, ": ", credential.status().message()));
  }
  return credential;
}

}  // namespace gpunode::kube
