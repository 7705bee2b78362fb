#include "cluster/image_pulls.h"

#include <algorithm>
#include <map>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "cluster/audit.h"
#include "core/text.h"

namespace gpunode::cluster {
namespace {

using core::StrCat;

// The worst of what happened to one image on one node.
struct PullRecord {
  const kube::ImagePullEvent* slowest = nullptr;  // slowest successful pull
  const kube::ImagePullEvent* failing = nullptr;  // latest failure
  int64_t failures = 0;
  int64_t failing_since = 0;
  int64_t failing_until = 0;
};

std::string Millis(int64_t millis) { return absl::FormatDuration(absl::Milliseconds(millis)); }

}  // namespace

void AddImagePullFindings(const kube::ClusterSnapshot& snapshot, absl::Duration slow_pull,
                          std::vector<Finding>& findings) {
  if (snapshot.image_pulls.empty()) return;
  absl::flat_hash_map<std::string_view, bool> gpu_node;
  for (const kube::NodeView& node : snapshot.nodes) gpu_node[node.name] = IsGpuNode(node);
  absl::flat_hash_map<std::pair<std::string_view, std::string_view>, bool> gpu_pod;
  for (const kube::PodView& pod : snapshot.pods) {
    gpu_pod[std::pair(pod.ns, pod.name)] = pod.RequestsGpus();
  }
  // The node decides when it is known; an event whose node is not in the input counts when its
  // pod requests GPUs.
  auto on_gpu_node = [&](const kube::ImagePullEvent& e) {
    if (auto it = gpu_node.find(e.node); it != gpu_node.end()) return it->second;
    auto pod = gpu_pod.find(std::pair(e.ns, e.pod));
    return pod != gpu_pod.end() && pod->second;
  };
  const int64_t slow_millis = absl::ToInt64Milliseconds(slow_pull);
  std::map<std::pair<std::string_view, std::string_view>, PullRecord> records;  // (node, image)
  for (const kube::ImagePullEvent& e : snapshot.image_pulls) {
    if (!on_gpu_node(e)) continue;
    PullRecord& r = records[std::pair(e.node, e.image)];
    if (e.outcome == kube::PullOutcome::kPulled) {
      if (e.waited_millis > slow_millis &&
          (r.slowest == nullptr || e.waited_millis > r.slowest->waited_millis)) {
        r.slowest = &e;
      }
      continue;
    }
    r.failures += e.count;
    if (r.failing == nullptr || e.last_unix >= r.failing->last_unix) r.failing = &e;
    if (e.first_unix != 0 && (r.failing_since == 0 || e.first_unix < r.failing_since)) {
      r.failing_since = e.first_unix;
    }
    r.failing_until = std::max(r.failing_until, e.last_unix);
  }
  for (const auto& [key, r] : records) {
    const auto& [node, image] = key;
    std::string node_text = node.empty() ? "a GPU node" : StrCat("GPU node ", node);
    std::string object = node.empty() ? StrCat("image/", image) : StrCat("node/", node);
    std::string prepull =
        StrCat("pre-pull it onto the GPU nodes (`gpunode cluster prepull ", image,
               " --selector nvidia.com/gpu.present=true --apply --wait`), or serve it from a "
               "registry mirror close to the nodes");
    if (r.slowest != nullptr) {
      const kube::ImagePullEvent& e = *r.slowest;
      std::string pull_only = e.pulled_millis != e.waited_millis
                                  ? StrCat(", ", Millis(e.pulled_millis), " pulling")
                                  : "";
      findings.push_back({std::string(kFindingSlowImagePull), Severity::kWarning, object,
                          StrCat("pod ", e.ns, "/", e.pod, " waited ", Millis(e.waited_millis),
                                 pull_only, " for image ", image, " on ", node_text,
                                 " (over --slow-pull ", absl::FormatDuration(slow_pull), ")"),
                          prepull});
    }
    if (r.failing != nullptr && r.failing_until - r.failing_since > slow_millis / 1000) {
      const kube::ImagePullEvent& e = *r.failing;
      findings.push_back(
          {std::string(kFindingSlowImagePull), Severity::kWarning, object,
           StrCat("pulls of image ", image, " on ", node_text, " have failed ", r.failures,
                  " time(s) over ",
                  absl::FormatDuration(absl::Seconds(r.failing_until - r.failing_since)),
                  " (latest: ", e.outcome == kube::PullOutcome::kBackOff ? "back-off" : "failed",
                  ", pod ", e.ns, "/", e.pod, ")"),
           StrCat("check the image name, tag and pull secret (`kubectl describe pod -n ", e.ns, " ",
                  e.pod, "`) and that the node reaches the registry; then ", prepull)});
    }
  }
}

}  // namespace gpunode::cluster
