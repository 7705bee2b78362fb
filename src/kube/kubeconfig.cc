#include "kube/kubeconfig.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/file_io.h"
#include "core/printable.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "yaml-cpp/yaml.h"

namespace gpunode::kube {

using core::StrAppend;
using core::StrCat;
using core::TrimSpace;

namespace {

namespace fs = std::filesystem;

struct NamedCluster {
  std::string server;
  std::string ca_data;  // base64
  std::string ca_file;  // resolved
  bool insecure = false;
  std::string tls_server_name;
  std::string origin;  // file it came from
};

struct NamedUser {
  std::string token;
  std::string token_file;
  std::string cert_data, key_data;  // base64
  std::string cert_file, key_file;  // resolved
  std::string username, password;
  std::optional<ExecPlugin> exec;
  std::string exec_problem;  // why the plugin cannot be used; an error only if a context uses it
  std::string auth_provider;
  std::string origin;
};

struct NamedContext {
  std::string cluster;
  std::string user;
  std::string ns;
  std::string origin;
};

struct Merged {
  std::string current_context;
  std::map<std::string, NamedContext> contexts;
  std::map<std::string, NamedCluster> clusters;
  std::map<std::string, NamedUser> users;
};

std::string Resolve(const std::string& file_path, const std::string& p) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  return (fs::path(file_path).parent_path() / p).lexically_normal().string();
}

std::string Str(const YAML::Node& map, const char* key) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return "";
  if (!v.IsScalar()) {
    throw YAML::RepresentationException(v.Mark(), std::string(key) + " must be a string");
  }
  return v.as<std::string>();
}

bool Bool(const YAML::Node& map, const char* key) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return false;
  if (!v.IsScalar()) {
    throw YAML::RepresentationException(v.Mark(), std::string(key) + " must be true or false");
  }
  return v.as<bool>();
}

// users[].user.exec. A malformed entry throws; settings client-go refuses go to `problem`, which
// is an error only when the selected context uses this user.
ExecPlugin ReadExecPlugin(const YAML::Node& exec, const std::string& file_path,
                          std::string& problem) {
  ExecPlugin plugin;
  plugin.command = Str(exec, "command");
  if (plugin.command.empty()) problem = "exec.command is required";
  // client-go: a relative path with a separator is relative to the kubeconfig; a bare name is
  // looked up on PATH.
  if (plugin.command.find('/') != std::string::npos)
    plugin.command = Resolve(file_path, plugin.command);
  plugin.api_version = Str(exec, "apiVersion");
  if (plugin.api_version != "client.authentication.k8s.io/v1" &&
      plugin.api_version != "client.authentication.k8s.io/v1beta1") {
    problem = StrCat("exec.apiVersion \"", plugin.api_version,
                     "\" is not supported; use client.authentication.k8s.io/v1 or v1beta1");
  }
  if (const YAML::Node args = exec["args"]; args && !args.IsNull()) {
    if (!args.IsSequence())
      throw YAML::RepresentationException(args.Mark(), "exec.args must be a list");
    for (const YAML::Node& arg : args) plugin.args.push_back(arg.as<std::string>());
  }
  if (const YAML::Node env = exec["env"]; env && !env.IsNull()) {
    if (!env.IsSequence())
      throw YAML::RepresentationException(env.Mark(), "exec.env must be a list");
    for (const YAML::Node& var : env) {
      if (!var.IsMap() || Str(var, "name").empty()) {
        throw YAML::RepresentationException(var.Mark(), "exec.env entries need a name and a value");
      }
      plugin.env.emplace_back(Str(var, "name"), Str(var, "value"));
    }
  }
  if (Str(exec, "interactiveMode") == "Always") {
    problem =
        "exec.interactiveMode Always needs a terminal, which gpunode never offers; use "
        "IfAvailable or Never";
  }
  plugin.install_hint = Str(exec, "installHint");
  plugin.provide_cluster_info = Bool(exec, "provideClusterInfo");
  return plugin;
}

// Parses one file into `merged`; entries already present win, as kubectl merges KUBECONFIG.
absl::Status ParseOne(const KubeconfigText& file, Merged& merged) {
  try {
    YAML::Node root = YAML::Load(file.text);
    if (!root || root.IsNull()) return absl::OkStatus();  // kubectl accepts empty files
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(StrCat("kubeconfig ", file.path,
                                               ": not a kubeconfig (expected a YAML mapping "
                                               "with clusters, users and contexts)"));
    }
    if (merged.current_context.empty()) merged.current_context = Str(root, "current-context");
    auto each = [&](const char* list, const char* inner, auto&& fn) {
      const YAML::Node items = root[list];
      if (!items || items.IsNull()) return;
      if (!items.IsSequence()) {
        throw YAML::RepresentationException(items.Mark(), std::string(list) + " must be a list");
      }
      for (const YAML::Node& item : items) {
        if (!item.IsMap()) {
          throw YAML::RepresentationException(item.Mark(),
                                              std::string(list) + " entries must be mappings");
        }
        std::string name = Str(item, "name");
        YAML::Node body = item[inner];
        if (body && !body.IsNull() && !body.IsMap()) {
          throw YAML::RepresentationException(body.Mark(),
                                              std::string(inner) + " must be a mapping");
        }
        fn(name, body ? body : YAML::Node(YAML::NodeType::Map));
      }
    };
    each("clusters", "cluster", [&](const std::string& name, const YAML::Node& c) {
      if (merged.clusters.count(name)) return;
      NamedCluster nc;
      nc.server = Str(c, "server");
      nc.ca_data = Str(c, "certificate-authority-data");
      nc.ca_file = Resolve(file.path, Str(c, "certificate-authority"));
      nc.insecure = Bool(c, "insecure-skip-tls-verify");
      nc.tls_server_name = Str(c, "tls-server-name");
      nc.origin = file.path;
      merged.clusters.emplace(name, std::move(nc));
    });
    each("users", "user", [&](const std::string& name, const YAML::Node& u) {
      if (merged.users.count(name)) return;
      NamedUser nu;
      nu.token = Str(u, "token");
      nu.token_file = Resolve(file.path, Str(u, "tokenFile"));
      nu.cert_data = Str(u, "client-certificate-data");
      nu.key_data = Str(u, "client-key-data");
      nu.cert_file = Resolve(file.path, Str(u, "client-certificate"));
      nu.key_file = Resolve(file.path, Str(u, "client-key"));
      nu.username = Str(u, "username");
      nu.password = Str(u, "password");
      if (const YAML::Node exec = u["exec"]; exec && exec.IsMap()) {
        nu.exec = ReadExecPlugin(exec, file.path, nu.exec_problem);
      }
      if (const YAML::Node ap = u["auth-provider"]; ap && ap.IsMap()) {
        nu.auth_provider = Str(ap, "name");
      }
      nu.origin = file.path;
      merged.users.emplace(name, std::move(nu));
    });
    each("contexts", "context", [&](const std::string& name, const YAML::Node& c) {
      if (merged.contexts.count(name)) return;
      merged.contexts.emplace(
          name, NamedContext{Str(c, "cluster"), Str(c, "user"), Str(c, "namespace"), file.path});
    });
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        StrCat("kubeconfig ", file.path, ": line ", e.mark.line + 1, ": ", core::Printable(e.msg)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Base64Field(const std::string& data, std::string_view where) {
  std::string out;
  // Tolerate the line breaks some tools wrap base64 with.
  std::string compact;
  for (char c : data) {
    if (c != '\n' && c != '\r' && c != ' ') compact.push_back(c);
  }
  if (!absl::Base64Unescape(compact, &out)) {
    return absl::InvalidArgumentError(StrCat(where, ": not valid base64"));
  }
  return out;
}

absl::StatusOr<std::string> FileField(const std::string& path, std::string_view where) {
  absl::StatusOr<std::string> text = core::ReadFile(path);
  if (!text.ok()) return absl::InvalidArgumentError(StrCat(where, ": ", text.status().message()));
  return text;
}

}  // namespace

absl::StatusOr<ClusterAccess> ParseKubeconfig(const std::vector<KubeconfigText>& files,
                                              std::string_view context) {
  Merged merged;
  for (const KubeconfigText& f : files) RETURN_IF_ERROR(ParseOne(f, merged));
  std::string paths;
  for (const KubeconfigText& f : files) StrAppend(&paths, paths.empty() ? "" : ":", f.path);
  std::string ctx_name = context.empty() ? merged.current_context : std::string(context);
  if (ctx_name.empty()) {
    return absl::InvalidArgumentError(
        StrCat("kubeconfig ", paths,
               ": no current-context; pass --context or run `kubectl config "
               "use-context NAME`"));
  }
  auto ctx_it = merged.contexts.find(ctx_name);
  if (ctx_it == merged.contexts.end()) {
    return absl::NotFoundError(StrCat("kubeconfig ", paths, ": context \"", ctx_name,
                                      "\" not found; `kubectl config get-contexts` lists "
                                      "them"));
  }
  const NamedContext& ctx = ctx_it->second;
  std::string where = StrCat("kubeconfig ", ctx.origin, ": context \"", ctx_name, "\"");
  auto cl_it = merged.clusters.find(ctx.cluster);
  if (cl_it == merged.clusters.end()) {
    return absl::NotFoundError(StrCat(where, ": cluster \"", ctx.cluster, "\" is not defined"));
  }
  const NamedCluster& cl = cl_it->second;
  ClusterAccess access;
  access.description = StrCat("context ", ctx_name, " in ", ctx.origin);
  access.server = cl.server;
  while (access.server.ends_with('/')) access.server.pop_back();
  if (access.server.empty()) {
    return absl::InvalidArgumentError(
        StrCat(where, ": cluster \"", ctx.cluster, "\" has no server"));
  }
  if (!access.server.starts_with("https://") && !access.server.starts_with("http://")) {
    access.server = StrCat("https://", access.server);
  }
  access.insecure_skip_tls_verify = cl.insecure;
  access.tls_server_name = cl.tls_server_name;
  std::string cluster_where = StrCat(where, ": cluster \"", ctx.cluster, "\"");
  if (!cl.ca_data.empty()) {
    ASSIGN_OR_RETURN(
        access.ca_pem,
        Base64Field(cl.ca_data, StrCat(cluster_where, ": certificate-authority-data")));
  } else if (!cl.ca_file.empty()) {
    ASSIGN_OR_RETURN(access.ca_pem,
                     FileField(cl.ca_file, StrCat(cluster_where, ": certificate-authority")));
  }
  if (!ctx.ns.empty()) access.default_namespace = ctx.ns;
  if (ctx.user.empty()) return access;  // anonymous
  auto user_it = merged.users.find(ctx.user);
  if (user_it == merged.users.end()) {
    return absl::NotFoundError(StrCat(where, ": user \"", ctx.user, "\" is not defined"));
  }
  const NamedUser& u = user_it->second;
  std::string user_where = StrCat(where, ": user \"", ctx.user, "\"");
  if (!u.cert_data.empty()) {
    ASSIGN_OR_RETURN(access.client_cert_pem,
                     Base64Field(u.cert_data, StrCat(user_where, ": client-certificate-data")));
  } else if (!u.cert_file.empty()) {
    ASSIGN_OR_RETURN(access.client_cert_pem,
                     FileField(u.cert_file, StrCat(user_where, ": client-certificate")));
  }
  if (!u.key_data.empty()) {
    ASSIGN_OR_RETURN(access.client_key_pem,
                     Base64Field(u.key_data, StrCat(user_where, ": client-key-data")));
  } else if (!u.key_file.empty()) {
    ASSIGN_OR_RETURN(access.client_key_pem,
                     FileField(u.key_file, StrCat(user_where, ": client-key")));
  }
  if (access.client_cert_pem.empty() != access.client_key_pem.empty()) {
    return absl::InvalidArgumentError(
        StrCat(user_where, ": has a client certificate or a key but not both; give both"));
  }
  access.token = u.token;
  access.token_file = u.token_file;
  access.username = u.username;
  access.password = u.password;
  bool has_credentials = !access.client_cert_pem.empty() || !access.token.empty() ||
                         !access.token_file.empty() || !access.username.empty();
  if (!u.exec_problem.empty()) {
    return absl::InvalidArgumentError(StrCat(user_where, ": ", u.exec_problem));
  }
  if (u.exec) {
    // As client-go: the plugin's credentials take the place of any written in the file.
    access.exec = *u.exec;
    access.exec->where = user_where;
    has_credentials = true;
  }
  if (!has_credentials && !u.auth_provider.empty()) {
    return absl::UnimplementedError(
        StrCat(user_where, ": uses the auth-provider \"", u.auth_provider,
               "\", which gpunode does not support; use a token or client certificate"));
  }
  return access;
}

absl::StatusOr<ClusterAccess> InClusterAccess(const AccessSources& sources) {
  if (sources.service_host.empty() || sources.service_port.empty()) {
    return absl::FailedPreconditionError(
        "not running in a pod (KUBERNETES_SERVICE_HOST/PORT unset)");
  }
  ClusterAccess access;
  std::string host = sources.service_host;
  if (host.find(':') != std::string::npos) host = StrCat("[", host, "]");  // IPv6
  access.server = StrCat("https://", host, ":", sources.service_port);
  access.token_file = StrCat(sources.service_account_dir, "/token");
  absl::StatusOr<std::string> token = core::ReadFile(access.token_file);
  if (!token.ok()) {
    return absl::FailedPreconditionError(
        StrCat("in-cluster: ", token.status().message(),
               "; is automountServiceAccountToken disabled for this pod?"));
  }
  ASSIGN_OR_RETURN(access.ca_pem,
                   FileField(StrCat(sources.service_account_dir, "/ca.crt"), "in-cluster"));
  if (absl::StatusOr<std::string> ns =
          core::ReadFile(StrCat(sources.service_account_dir, "/namespace"));
      ns.ok() && !ns->empty()) {
    access.default_namespace = std::string(TrimSpace(*ns));
  }
  access.description = "in-cluster service account";
  return access;
}

AccessSources SourcesFromEnvironment() {
  AccessSources s;
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  s.kubeconfig_env = env("KUBECONFIG");
  s.home = env("HOME");
  s.service_host = env("KUBERNETES_SERVICE_HOST");
  s.service_port = env("KUBERNETES_SERVICE_PORT");
  return s;
}

absl::StatusOr<ClusterAccess> ResolveAccess(const AccessSources& sources) {
  std::vector<std::string> paths;
  if (!sources.kubeconfig_flag.empty()) {
    paths.push_back(sources.kubeconfig_flag);
  } else if (!sources.kubeconfig_env.empty()) {
    for (absl::string_view p : absl::StrSplit(sources.kubeconfig_env, ':', absl::SkipEmpty())) {
      std::error_code ec;
      // kubectl skips KUBECONFIG entries that do not exist.
      if (fs::exists(std::string(p), ec)) paths.emplace_back(p);
    }
    if (paths.empty()) {
      return absl::NotFoundError(
          StrCat("KUBECONFIG=", sources.kubeconfig_env, ": none of these files exists"));
    }
  } else if (std::error_code ec;
             !sources.home.empty() && fs::exists(StrCat(sources.home, "/.kube/config"), ec)) {
    paths.push_back(StrCat(sources.home, "/.kube/config"));
  } else if (!sources.service_host.empty()) {
    if (!sources.context.empty()) {
      return absl::InvalidArgumentError(
          "--context needs a kubeconfig; in a pod gpunode uses the service account");
    }
    return InClusterAccess(sources);
  } else {
    // The flags that give one are the command's to name (cli::AppendHint), not this layer's.
    return absl::NotFoundError(
        "no kubeconfig ($KUBECONFIG, ~/.kube/config) and not running in a pod");
  }
  std::vector<KubeconfigText> files;
  for (const std::string& p : paths) {
    absl::StatusOr<std::string> text = core::ReadFile(p);
    if (!text.ok()) return absl::NotFoundError(StrCat("kubeconfig ", text.status().message()));
    files.push_back({p, std::move(*text)});
  }
  return ParseKubeconfig(files, sources.context);
}

}  // namespace gpunode::kube
