#include "kube/pod_view.h"

#include <algorithm>

#include "core/text.h"

namespace gpunode::kube {

std::string NamespacedName(const PodView& pod) { return core::StrCat(pod.ns, "/", pod.name); }

std::string_view PhaseName(PodPhase phase) {
  switch (phase) {
    case PodPhase::kPending:
      return "Pending";
    case PodPhase::kRunning:
      return "Running";
    case PodPhase::kSucceeded:
      return "Succeeded";
    case PodPhase::kFailed:
      return "Failed";
    case PodPhase::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

ResourceList EffectiveRequests(const std::vector<ContainerResources>& containers) {
  // Requests default to limits for resources that only have a limit (API defaulting), and
  // extended resources always carry both once admitted.
  auto request_of = [](const ContainerResources& c, std::string_view name) -> int64_t {
    if (const ResourceAmount* r = FindResource(c.requests, name)) return r->milli;
    if (const ResourceAmount* l = FindResource(c.limits, name)) return l->milli;
    return 0;
  };
  std::vector<std::string_view> names;
  for (const ContainerResources& c : containers) {
    for (const ResourceList* list : {&c.requests, &c.limits}) {
      for (const ResourceAmount& r : *list) {
        if (std::find(names.begin(), names.end(), r.name) == names.end()) names.push_back(r.name);
      }
    }
  }
  ResourceList out;
  for (std::string_view name : names) {
    int64_t app_sum = 0;
    int64_t sidecars_so_far = 0;
    int64_t init_peak = 0;
    for (const ContainerResources& c : containers) {
      int64_t v = request_of(c, name);
      if (!c.init) {
        app_sum += v;
      } else if (c.sidecar) {
        // A sidecar starts before the next init containers and keeps running beside the app.
        sidecars_so_far += v;
        init_peak = std::max(init_peak, sidecars_so_far);
      } else {
        init_peak = std::max(init_peak, sidecars_so_far + v);
      }
    }
    int64_t total = std::max(app_sum + sidecars_so_far, init_peak);
    if (total != 0) out.push_back({name, total, {}});
  }
  return out;
}

}  // namespace gpunode::kube
