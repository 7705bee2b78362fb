#include "cluster/webhook.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "absl/strings/escaping.h"
#include "cluster/admission_review.h"
#include "core/text.h"
#include "kube/gpu_resources.h"
#include "kube/quantity.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {
namespace {

using json = nlohmann::json;
using core::StrCat;

bool RequestsNvidia(const kube::PodView& pod) {
  for (const kube::ContainerResources& c : pod.details->containers) {
    if (!c.requests.empty() || !c.limits.empty()) return true;
  }
  return false;
}

// Tolerates the GPU taint whatever its value, as the toleration we add does.
bool CoversGpuTaint(const kube::Toleration& t) {
  bool key = t.key == kube::kGpuTaintKey || t.key.empty();
  return key && t.op == "Exists" && (t.effect.empty() || t.effect == "NoSchedule");
}

std::string Lower(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != ' ' && c != '\t')
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

void CheckTolerations(const kube::PodDetails& pod, const ClusterLimits& limits,
                      std::vector<std::string>& problems) {
  for (size_t i = 0; i < pod.tolerations.size(); ++i) {
    const kube::Toleration& t = pod.tolerations[i];
    std::string field = StrCat("spec.tolerations[", i, "]");
    if (t.key != kube::kGpuTaintKey) {
      std::string folded = Lower(t.key);
      if (folded == kube::kGpuTaintKey || folded == "nvidia/gpu") {
        problems.push_back(StrCat(field, ".key: \"", t.key, "\" never matches the GPU taint key ",
                                  kube::kGpuTaintKey, " (keys are exact and case-sensitive)"));
      }
      continue;
    }
    if (!t.effect.empty() && t.effect != "NoSchedule") {
      problems.push_back(StrCat(field, ".effect: ", t.effect,
                                " never matches the GPU taint, whose effect is NoSchedule; use "
                                "NoSchedule or leave effect empty"));
    }
    if (t.op == "Exists" && !t.value.empty()) {
      problems.push_back(StrCat(field, ".value: must be empty when operator is Exists"));
    } else if (t.op != "Exists" && t.op != "Equal" && !t.op.empty()) {
      problems.push_back(StrCat(field, ".operator: \"", t.op, "\" is not Exists or Equal"));
    } else if (t.op != "Exists" && !limits.gpu_taint_values.empty() &&
               std::find(limits.gpu_taint_values.begin(), limits.gpu_taint_values.end(), t.value) ==
                   limits.gpu_taint_values.end()) {
      std::string values;
      for (const std::string& v : limits.gpu_taint_values) {
        core::StrAppend(&values, values.empty() ? "" : ", ", kube::kGpuTaintKey, "=", v);
      }
      problems.push_back(StrCat(field, ": value \"", t.value,
                                "\" never matches the GPU taint on the nodes (", values,
                                "); use operator Exists"));
    }
  }
}

void CheckResources(const kube::PodView& pod, const ClusterLimits& limits,
                    std::vector<std::string>& problems) {
  int app = 0, init = 0;
  for (const kube::ContainerResources& c : pod.details->containers) {
    std::string field = c.init ? StrCat("spec.initContainers[", init++, "]")
                               : StrCat("spec.containers[", app++, "]");
    for (const kube::ResourceAmount& req : c.requests) {
      const kube::ResourceAmount* lim = kube::FindResource(c.limits, req.name);
      if (lim == nullptr) {
        problems.push_back(StrCat(field, ".resources.limits[", req.name,
                                  "]: Required value: set a limit equal to the request (", req.text,
                                  "); GPUs cannot be overcommitted"));
      } else if (lim->milli != req.milli) {
        problems.push_back(StrCat(field, ".resources.requests[", req.name, "]: Invalid value: \"",
                                  req.text, "\": must be equal to ", req.name, " limit of ",
                                  lim->text));
      }
    }
    for (const kube::ResourceList* list : {&c.limits, &c.requests}) {
      for (const kube::ResourceAmount& r : *list) {
        bool is_request = list == &c.requests;
        // Report a fractional value once, preferring the limit.
        if (is_request && kube::FindResource(c.limits, r.name)) continue;
        if (!kube::IsWholeMilli(r.milli)) {
          problems.push_back(StrCat(field, ".resources.", is_request ? "requests" : "limits", "[",
                                    r.name, "]: Invalid value: \"", r.text,
                                    "\": must be an integer"));
        }
      }
    }
  }
  for (const kube::ResourceAmount& r : pod.gpu_requests) {
    auto it = limits.largest.find(r.name);
    if (it == limits.largest.end()) continue;
    if (r.milli > it->second * 1000) {
      problems.push_back(StrCat("the pod requests ", kube::FormatMilli(r.milli), " ", r.name,
                                " but the largest node has ", it->second,
                                ", so it would stay Pending forever; split the work or lower "
                                "the request"));
    }
  }
}

}  // namespace

AdmissionReply Mutate(std::string_view request_body) {
  std::string error;
  std::optional<Review> review = ParseReview(request_body, error);
  if (!review) return {400, error};
  json out = Response(*review, true);
  if (!review->IsCreateOf("Pod")) return Reply(out);
  absl::StatusOr<kube::ClusterSnapshot> snapshot = ReadObject(*review, "Pod");
  // An unreadable pod is the validating webhook's (and the API server's) to reject.
  if (!snapshot.ok() || snapshot->pods.empty()) return Reply(out);
  const kube::PodView& pod = snapshot->pods.front();
  if (!RequestsNvidia(pod)) return Reply(out);
  const kube::PodDetails& d = *pod.details;
  if (std::any_of(d.tolerations.begin(), d.tolerations.end(), CoversGpuTaint)) return Reply(out);
  json toleration = {
      {"key", std::string(kube::kGpuTaintKey)}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
  json patch = json::array();
  if (d.tolerations_present) {
    patch.push_back({{"op", "add"}, {"path", "/spec/tolerations/-"}, {"value", toleration}});
  } else {
    patch.push_back(
        {{"op", "add"}, {"path", "/spec/tolerations"}, {"value", json::array({toleration})}});
  }
  out["response"]["patchType"] = "JSONPatch";
  out["response"]["patch"] = absl::Base64Escape(patch.dump());
  return Reply(out);
}

AdmissionReply Validate(std::string_view request_body, const ClusterLimits& limits) {
  std::string error;
  std::optional<Review> review = ParseReview(request_body, error);
  if (!review) return {400, error};
  json out = Response(*review, true);
  // CREATE only: refusing an UPDATE of a pod admitted before this webhook existed would also
  // block its controllers, down to removing finalizers when it is deleted.
  if (!review->IsCreateOf("Pod")) return Reply(out);
  std::vector<std::string> problems;
  absl::StatusOr<kube::ClusterSnapshot> snapshot = ReadObject(*review, "Pod");
  if (!snapshot.ok()) {
    problems.push_back(std::string(core::View(snapshot.status().message())));
  } else if (!snapshot->pods.empty()) {
    const kube::PodView& pod = snapshot->pods.front();
    CheckResources(pod, limits, problems);
    CheckTolerations(*pod.details, limits, problems);
  }
  if (problems.empty()) return Reply(out);
  std::string message = "gpunode: ";
  for (size_t i = 0; i < problems.size(); ++i)
    core::StrAppend(&message, i ? "; " : "", problems[i]);
  out["response"]["allowed"] = false;
  out["response"]["status"] = {{"code", 403}, {"reason", "Forbidden"}, {"message", message}};
  return Reply(out);
}

}  // namespace gpunode::cluster
