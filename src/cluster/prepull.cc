#include "cluster/prepull.h"

#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "kube/daemonset_view.h"

namespace gpunode::cluster {
namespace {

using json = nlohmann::json;
using core::StrCat;

constexpr char kNameLabel[] = "app.kubernetes.io/name";
constexpr char kInstanceLabel[] = "app.kubernetes.io/instance";

// key=value, key==value, key!=value, key, !key as node affinity requirements.
absl::StatusOr<json> SelectorRequirements(const std::string& selector) {
  json out = json::array();
  for (absl::string_view raw : absl::StrSplit(selector, ',', absl::SkipWhitespace())) {
    std::string term(core::TrimSpace(std::string_view(raw.data(), raw.size())));
    auto bad = [&](std::string_view why) {
      return absl::InvalidArgumentError(StrCat("--selector: \"", term, "\": ", why,
                                               "; use key=value, key!=value, key or !key, "
                                               "comma-separated"));
    };
    if (term.find_first_of("()") != std::string::npos)
      return bad("set expressions are not supported");
    std::string key, op, value;
    if (size_t ne = term.find("!="); ne != std::string::npos) {
      key = term.substr(0, ne), op = "NotIn", value = term.substr(ne + 2);
    } else if (size_t eq = term.find('='); eq != std::string::npos) {
      size_t skip = term.compare(eq, 2, "==") == 0 ? 2 : 1;
      key = term.substr(0, eq), op = "In", value = term.substr(eq + skip);
    } else if (term[0] == '!') {
      key = term.substr(1), op = "DoesNotExist";
    } else {
      key = term, op = "Exists";
    }
    key = std::string(core::TrimSpace(key));
    value = std::string(core::TrimSpace(value));
    if (key.empty() || key.find_first_of(" =!") != std::string::npos) return bad("bad key");
    json req = {{"key", key}, {"operator", op}};
    if (op == "In" || op == "NotIn") req["values"] = json::array({value});
    out.push_back(std::move(req));
  }
  return out;
}

json Resources() {
  return {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}},
          {"limits", {{"cpu", "100m"}, {"memory", "64Mi"}}}};
}

json ContainerSecurity() {
  return {{"allowPrivilegeEscalation", false},
          {"readOnlyRootFilesystem", true},
          {"capabilities", {{"drop", json::array({"ALL"})}}}};
}

std::string DaemonSetPath(const std::string& ns, const std::string& name) {
  std::string path = StrCat("/apis/apps/v1/namespaces/", kube::UrlEncode(ns), "/daemonsets");
  if (!name.empty()) core::StrAppend(&path, "/", kube::UrlEncode(name));
  return path;
}

}  // namespace

absl::StatusOr<json> PrepullDaemonSet(const PrepullOptions& o) {
  if (o.images.empty()) {
    return absl::InvalidArgumentError("name at least one image to pre-pull");
  }
  if (o.command.empty()) {
    return absl::InvalidArgumentError("--command: empty; give the no-op to run, e.g. /bin/true");
  }
  ASSIGN_OR_RETURN(json requirements, SelectorRequirements(o.selector));
  json labels = {{kNameLabel, "gpunode-prepull"}, {kInstanceLabel, o.name}};
  json init = json::array();
  for (size_t i = 0; i < o.images.size(); ++i) {
    const std::string& image = o.images[i];
    if (image.empty() || image.find_first_of(" \t\n\"") != std::string::npos) {
      return absl::InvalidArgumentError(StrCat("image \"", image, "\": not an image reference"));
    }
    init.push_back({{"name", StrCat("pull-", i)},
                    {"image", image},
                    {"imagePullPolicy", "IfNotPresent"},
                    {"command", o.command},
                    // With nvidia as the default runtime, CUDA images' NVIDIA_VISIBLE_DEVICES=all
                    // would hand every GPU of the node to a container that needs none.
                    {"env", json::array({{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "void"}}})},
                    {"resources", Resources()},
                    {"securityContext", ContainerSecurity()}});
  }
  json pod_spec = {
      {"initContainers", init},
      {"containers", json::array({{{"name", "pause"},
                                   {"image", o.pause_image},
                                   {"imagePullPolicy", "IfNotPresent"},
                                   {"resources", Resources()},
                                   {"securityContext", ContainerSecurity()}}})},
      {"tolerations",
       json::array(
           {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}})},
      {"automountServiceAccountToken", false},
      {"enableServiceLinks", false},
      {"terminationGracePeriodSeconds", 1},
      {"securityContext",
       {{"runAsNonRoot", true},
        {"runAsUser", 65532},
        {"runAsGroup", 65532},
        {"seccompProfile", {{"type", "RuntimeDefault"}}}}}};
  if (!requirements.empty()) {
    pod_spec["affinity"] = {
        {"nodeAffinity",
         {{"requiredDuringSchedulingIgnoredDuringExecution",
           {{"nodeSelectorTerms", json::array({{{"matchExpressions", requirements}}})}}}}}};
  }
  json metadata = {{"name", o.name},
                   {"labels",
                    {{kNameLabel, "gpunode-prepull"},
                     {kInstanceLabel, o.name},
                     {"app.kubernetes.io/managed-by", "gpunode"}}}};
  if (!o.ns.empty()) metadata["namespace"] = o.ns;
  return json{{"apiVersion", "apps/v1"},
              {"kind", "DaemonSet"},
              {"metadata", metadata},
              {"spec",
               {{"selector", {{"matchLabels", labels}}},
                // Every node pulls at once when the images change: the pods hold no work.
                {"updateStrategy",
                 {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", "100%"}}}}},
                {"template", {{"metadata", {{"labels", labels}}}, {"spec", pod_spec}}}}}};
}

absl::Status ApplyPrepull(kube::Client& client, const std::string& ns, const std::string& name,
                          const json& daemonset, std::ostream& out) {
  kube::HttpRequest create{"POST", DaemonSetPath(ns, ""), "application/json", daemonset.dump()};
  ASSIGN_OR_RETURN(kube::HttpResponse created, client.Send(create));
  if (created.status == 201 || created.status == 200) {
    out << "daemonset " << ns << "/" << name << " created\n";
    return absl::OkStatus();
  }
  if (created.status != 409) return kube::StatusFromResponse(create, created);
  // It exists (an earlier run): replace it, so a rerun with other images takes effect.
  ASSIGN_OR_RETURN(std::string current, client.Get(DaemonSetPath(ns, name)));
  ASSIGN_OR_RETURN(kube::DaemonSetView existing,
                   kube::ReadDaemonSet(current, StrCat("GET ", DaemonSetPath(ns, name))));
  json replacement = daemonset;
  replacement["metadata"]["resourceVersion"] = existing.resource_version;
  kube::HttpRequest replace{"PUT", DaemonSetPath(ns, name), "application/json", replacement.dump()};
  ASSIGN_OR_RETURN(kube::HttpResponse replaced, client.Send(replace));
  if (replaced.status != 200) return kube::StatusFromResponse(replace, replaced);
  out << "daemonset " << ns << "/" << name << " replaced\n";
  return absl::OkStatus();
}

absl::StatusOr<bool> WaitForPrepull(kube::Client& client, const std::string& ns,
                                    const std::string& name, const PrepullWait& wait,
                                    core::Env& env, std::ostream& out) {
  const absl::Time deadline = env.Now() + wait.timeout;
  std::string last;
  for (;;) {
    ASSIGN_OR_RETURN(std::string body, client.Get(DaemonSetPath(ns, name)));
    ASSIGN_OR_RETURN(kube::DaemonSetView ds,
                     kube::ReadDaemonSet(body, StrCat("GET ", DaemonSetPath(ns, name))));
    int64_t generation = ds.generation;
    int64_t observed = ds.observed_generation;
    int64_t desired = ds.desired_scheduled;
    int64_t ready = ds.ready;
    int64_t updated = ds.updated_scheduled;
    bool current = observed >= generation && observed > 0;
    std::string progress = StrCat(ready, " of ", desired, " node(s) ready, ", updated, " updated");
    if (current && ready == desired && updated == desired) {
      if (desired == 0) {
        out << "no node matches the selector: nothing to pull\n";
      } else {
        out << "images present on all " << desired << " selected node(s)\n";
      }
      return true;
    }
    if (progress != last) {
      out << (current ? "" : "waiting for the DaemonSet controller: ") << progress << "\n";
      last = progress;
    }
    if (env.Now() + wait.poll_interval > deadline) {
      out << "timed out after " << absl::FormatDuration(wait.timeout) << ": " << progress
          << "; see `kubectl get pods -n " << ns << " -l " << kInstanceLabel << "=" << name
          << " -o wide` and their events\n";
      return false;
    }
    if (!env.SleepFor(wait.poll_interval)) return false;
  }
}

absl::Status DeletePrepull(kube::Client& client, const std::string& ns, const std::string& name,
                           std::ostream& out) {
  json options = {
      {"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"propagationPolicy", "Background"}};
  kube::HttpRequest del{"DELETE", DaemonSetPath(ns, name), "application/json", options.dump()};
  ASSIGN_OR_RETURN(kube::HttpResponse response, client.Send(del));
  if (response.status == 404) {
    out << "daemonset " << ns << "/" << name << " not found: nothing to delete\n";
    return absl::OkStatus();
  }
  if (response.status != 200 && response.status != 202) {
    return kube::StatusFromResponse(del, response);
  }
  out << "daemonset " << ns << "/" << name << " deleted\n";
  return absl::OkStatus();
}

}  // namespace gpunode::cluster
