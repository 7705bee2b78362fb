#include "kube/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/json_field.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace gpunode::kube {
namespace {

using json = nlohmann::json;
using absl::StrCat;

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

// gpunode's environment with the plugin's variables and KUBERNETES_EXEC_INFO on top.
std::vector<std::string> PluginEnvironment(const ExecPlugin& plugin, const std::string& info) {
  std::vector<std::pair<std::string, std::string>> extra = plugin.env;
  extra.emplace_back("KUBERNETES_EXEC_INFO", info);
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    std::string_view name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [n, v] : extra) replaced = replaced || n == name;
    if (!replaced) out.emplace_back(entry);
  }
  for (const auto& [name, value] : extra) out.push_back(StrCat(name, "=", value));
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
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError(StrCat(what, ": pipe: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  std::vector<std::string> env = PluginEnvironment(plugin, ExecInfo(plugin, cluster));
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = {plugin.command};
  args.insert(args.end(), plugin.args.begin(), plugin.args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int spawn_error =
      posix_spawnp(&pid, plugin.command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (spawn_error != 0) {
    close(out[0]);
    return absl::FailedPreconditionError(
        StrCat(what, ": cannot run it: ", std::strerror(spawn_error), Hint(plugin)));
  }

  std::string output;
  bool timed_out = false;
  bool too_long = false;
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int left = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd fd{out[0], POLLIN, 0};
    int ready = poll(&fd, 1, left);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    char buf[4096];
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buf, static_cast<size_t>(n));
    if (output.size() > kMaxOutput) {
      too_long = true;
      break;
    }
  }
  close(out[0]);
  if (timed_out || too_long) kill(pid, SIGKILL);
  int wait_status = 0;
  while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return absl::DeadlineExceededError(StrCat(what, ": gave no credentials within ",
                                              absl::FormatDuration(timeout),
                                              "; run it by hand to see what it waits for"));
  }
  if (too_long) {
    return absl::InvalidArgumentError(StrCat(what, ": printed more than 1 MiB"));
  }
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    std::string how = WIFEXITED(wait_status)
                          ? StrCat("exited with status ", WEXITSTATUS(wait_status))
                          : StrCat("was killed by signal ", WTERMSIG(wait_status));
    return absl::UnauthenticatedError(
        StrCat(what, ": ", how, " (its messages are above)", Hint(plugin)));
  }
  absl::StatusOr<ExecCredential> credential = ParseExecCredential(output, plugin.api_version);
  if (!credential.ok()) {
    return absl::InvalidArgumentError(StrCat(what, ": ", credential.status().message()));
  }
  return credential;
}

}  // namespace gpunode::kube
