#include "cluster/drain_notice.h"

#include <cctype>

#include "core/text.h"
#include "kube/gpu_resources.h"
#include "kube/object_event.h"
#include "kube/object_meta.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {
namespace {

using core::StrCat;
using json = nlohmann::json;

// How far up an ownership chain owners are told: pod -> Job -> JobSet, pod -> ReplicaSet ->
// Deployment, with room for one more layer (a workload queue's object above a JobSet).
constexpr int kMaxOwnerDepth = 4;

// As Kubernetes writes its times: RFC 3339 in UTC, to the second, with Z.
std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

// The API path of a namespaced object an ownerReference names. The resource is the kind in lower
// case and plural, as the API names every controller that owns pods (jobs, jobsets, replicasets,
// statefulsets, pytorchjobs, ...).
std::string ObjectPath(const kube::ObjectRef& ref) {
  std::string plural;
  for (char c : ref.kind) plural += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!plural.empty() && plural.back() == 's') {
    plural += "es";
  } else if (plural.size() > 1 && plural.back() == 'y') {
    plural.back() = 'i';
    plural += "es";
  } else {
    plural += "s";
  }
  const bool core_group = ref.api_version.find('/') == std::string::npos;
  return StrCat(core_group ? "/api/" : "/apis/", ref.api_version, "/namespaces/",
                kube::UrlEncode(ref.ns), "/", plural, "/", kube::UrlEncode(ref.name));
}

// The controller ownerReference of an object in `ns`; nullopt when it has none.
std::optional<kube::ObjectRef> ControllerOf(const kube::ObjectMeta& meta, const std::string& ns) {
  if (!meta.has_controller) return std::nullopt;
  return kube::ObjectRef{.api_version = meta.controller_api_version,
                         .kind = meta.controller_kind,
                         .ns = ns,
                         .name = meta.controller_name,
                         .uid = meta.controller_uid};
}

}  // namespace

std::string NoticeMessage(const DrainNotice& notice, std::string_view owner_kind) {
  std::string message = owner_kind.empty() ? StrCat("node ", notice.node)
                                           : StrCat("a pod of this ", owner_kind, " runs on node ",
                                                    notice.node, ", which");
  core::StrAppend(&message, " is draining ", notice.why, " (", notice.component, "): ");
  if (notice.deadline.has_value()) {
    core::StrAppend(&message, "checkpoint and exit; GPU pods still running on it at ",
                    Rfc3339(*notice.deadline), " are evicted");
  } else {
    core::StrAppend(&message,
                    "checkpoint and exit when you can; its GPU pods are waited for until they "
                    "end, none is evicted");
  }
  return message;
}

std::vector<std::string> DrainNotifier::Tell(kube::Client& client,
                                             const std::vector<const kube::PodView*>& pods,
                                             const DrainNotice& notice, absl::Time now) {
  new_problems_.clear();
  const std::string deadline = notice.deadline ? Rfc3339(*notice.deadline) : std::string();
  for (const kube::PodView* pod : pods) {
    if (pod->details == nullptr) continue;
    const kube::PodDetails& details = *pod->details;
    if (details.drain_notice_node == notice.node && details.drain_notice_deadline == deadline) {
      continue;  // told before, by this run or an earlier one
    }
    if (!told_
             .insert(StrCat(notice.node, "|", deadline, "|", kube::NamespacedName(*pod), "|",
                            details.uid))
             .second) {
      continue;
    }
    json annotations = {{std::string(kube::kDrainNoticeNodeAnnotation), notice.node},
                        {std::string(kube::kDrainNoticeDeadlineAnnotation),
                         deadline.empty() ? json(nullptr) : json(deadline)}};
    absl::Status patched = client.Patch(StrCat("/api/v1/namespaces/", kube::UrlEncode(pod->ns),
                                               "/pods/", kube::UrlEncode(pod->name)),
                                        "application/merge-patch+json",
                                        json{{"metadata", {{"annotations", annotations}}}}.dump());
    if (!patched.ok() && !absl::IsNotFound(patched)) {
      Problem(StrCat("could not annotate the GPU pods (", patched.message(), ")"));
    }
    absl::Status posted = kube::PostEvent(client,
                                          {.object = {.api_version = "v1",
                                                      .kind = "Pod",
                                                      .ns = std::string(pod->ns),
                                                      .name = std::string(pod->name),
                                                      .uid = std::string(details.uid)},
                                           .type = "Warning",
                                           .reason = "NodeDraining",
                                           .message = NoticeMessage(notice, {}),
                                           .component = notice.component,
                                           .instance = notice.node},
                                          now);
    if (!posted.ok()) Problem(StrCat("could not post Events (", posted.message(), ")"));
    ++pods_told_;
    TellOwners(client, *pod, notice, now);
  }
  return new_problems_;
}

void DrainNotifier::TellOwners(kube::Client& client, const kube::PodView& pod,
                               const DrainNotice& notice, absl::Time now) {
  const kube::PodDetails& details = *pod.details;
  if (details.controller_kind.empty()) return;
  std::optional<kube::ObjectRef> owner =
      kube::ObjectRef{.api_version = std::string(details.controller_api_version),
                      .kind = std::string(details.controller_kind),
                      .ns = std::string(pod.ns),
                      .name = std::string(details.controller_name),
                      .uid = std::string(details.controller_uid)};
  for (int depth = 0; depth < kMaxOwnerDepth && owner.has_value(); ++depth) {
    const kube::ObjectRef ref = *owner;
    // An owner told before had its own owners told then.
    if (!owners_told_
             .insert(StrCat(notice.node, "|", ref.api_version, "|", ref.kind, "|", ref.ns, "|",
                            ref.name))
             .second) {
      return;
    }
    absl::Status posted = kube::PostEvent(client,
                                          {.object = ref,
                                           .type = "Warning",
                                           .reason = "NodeDraining",
                                           .message = NoticeMessage(notice, ref.kind),
                                           .component = notice.component,
                                           .instance = notice.node},
                                          now);
    if (!posted.ok()) Problem(StrCat("could not post Events (", posted.message(), ")"));
    // Its own controller, if it can be read: an owner that is gone or that these credentials
    // may not read ends the chain quietly (the owners below it were told).
    absl::StatusOr<std::string> body = client.Get(ObjectPath(ref));
    if (!body.ok()) return;
    absl::StatusOr<kube::ObjectMeta> meta =
        kube::ReadObjectMeta(*body, StrCat("GET ", ObjectPath(ref)), ref.kind);
    if (!meta.ok()) {
      Problem(StrCat("could not read an owner (", meta.status().message(), ")"));
      return;
    }
    owner = ControllerOf(*meta, ref.ns);
  }
}

void DrainNotifier::Problem(std::string what) {
  // One line per kind of problem: the first request's words stand for the rest.
  std::string key = what.substr(0, what.find(" ("));
  if (problems_said_.insert(key).second) new_problems_.push_back(std::move(what));
}

}  // namespace gpunode::cluster
