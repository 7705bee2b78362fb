#include "cluster/gpu_job_defaults.h"

#include "absl/strings/escaping.h"
#include "absl/time/time.h"
#include "cluster/admission_review.h"
#include "core/text.h"

namespace gpunode::cluster {
namespace {

using json = nlohmann::json;
using core::StrCat;

bool PodRequestsNvidia(const kube::PodView& pod) {
  for (const kube::ContainerResources& c : pod.details->containers) {
    if (!c.requests.empty() || !c.limits.empty()) return true;
  }
  return false;
}

// The field to add, or nothing when the object needs no default.
struct Addition {
  const char* field = nullptr;  // under spec
  int64_t seconds = 0;
  std::string ns;  // the object's metadata.namespace
};

std::optional<Addition> PodAddition(const Review& review, const JobDefaults& defaults) {
  if (!defaults.active_deadline_seconds) return std::nullopt;
  absl::StatusOr<kube::ClusterSnapshot> snapshot = ReadObject(review, "Pod");
  if (!snapshot.ok() || snapshot->pods.empty()) return std::nullopt;
  const kube::PodView& pod = snapshot->pods.front();
  if (pod.active_deadline) return std::nullopt;
  // A deadline would make Deployments, StatefulSets and DaemonSets kill and recreate their pods
  // forever: only pods of Jobs and bare pods are meant to end.
  if (pod.has_controller && pod.details->controller_kind != "Job") return std::nullopt;
  if (!PodRequestsNvidia(pod)) return std::nullopt;
  return Addition{"activeDeadlineSeconds", *defaults.active_deadline_seconds, std::string(pod.ns)};
}

std::optional<Addition> JobAddition(const Review& review, const JobDefaults& defaults) {
  if (!defaults.ttl_seconds) return std::nullopt;
  absl::StatusOr<kube::ClusterSnapshot> snapshot = ReadObject(review, "Job");
  if (!snapshot.ok() || snapshot->jobs.empty()) return std::nullopt;
  const kube::JobView& job = snapshot->jobs.front();
  if (job.ttl_after_finished || !job.RequestsGpus()) return std::nullopt;
  return Addition{"ttlSecondsAfterFinished", *defaults.ttl_seconds, std::string(job.ns)};
}

}  // namespace

AdmissionReply ApplyJobDefaults(std::string_view request_body, const JobDefaults& defaults,
                                const NamespaceOptedIn& opted_in) {
  std::string error;
  std::optional<Review> review = ParseReview(request_body, error);
  if (!review) return {400, error};
  json out = Response(*review, true);
  std::optional<Addition> addition;
  if (review->IsCreateOf("Pod")) {
    addition = PodAddition(*review, defaults);
  } else if (review->IsCreateOf("Job")) {
    addition = JobAddition(*review, defaults);
  }
  if (!addition) return Reply(out);
  // The MutatingWebhookConfiguration's namespaceSelector sends only opted-in namespaces; the
  // label is checked again so that a configuration without it changes nothing.
  std::string ns = review->ns.empty() ? addition->ns : review->ns;
  absl::StatusOr<bool> enabled = ns.empty() ? absl::StatusOr<bool>(false) : opted_in(ns);
  if (!enabled.ok()) {
    out["response"]["warnings"] = {StrCat("gpunode: no default ", addition->field,
                                          " added: cannot read namespace ", ns, "'s labels (",
                                          core::View(enabled.status().message()), ")")};
    return Reply(out);
  }
  if (!*enabled) return Reply(out);
  json patch = json::array(
      {{{"op", "add"}, {"path", StrCat("/spec/", addition->field)}, {"value", addition->seconds}}});
  out["response"]["patchType"] = "JSONPatch";
  out["response"]["patch"] = absl::Base64Escape(patch.dump());
  out["response"]["warnings"] = {
      StrCat("gpunode: set spec.", addition->field, "=", addition->seconds, " (",
             absl::FormatDuration(absl::Seconds(addition->seconds)), "), the default of namespace ",
             ns, " (", kJobDefaultsLabel, "=", kJobDefaultsEnabled, ")")};
  return Reply(out);
}

}  // namespace gpunode::cluster
