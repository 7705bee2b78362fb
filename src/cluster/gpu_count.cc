#include "cluster/gpu_count.h"

#include "absl/strings/numbers.h"
#include "core/text.h"
#include "kube/gpu_resources.h"

namespace gpunode::cluster {
namespace {

// Where NFD publishes the features of a local feature file that carry no prefix of their own.
constexpr std::string_view kNfdFeaturePrefix = "feature.node.kubernetes.io/";

std::optional<int64_t> CountOf(std::string_view text) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &n) || n < 0) {
    return std::nullopt;
  }
  return n;
}

}  // namespace

std::vector<std::string> CountLabel::Keys() const {
  if (!prefix.empty()) return {prefix + key};
  return {key, std::string(kNfdFeaturePrefix) + key};
}

bool ExpectedGpus::LabelsDisagree() const {
  return !own_invalid.empty() || (own_count && gfd_count && *own_count != *gfd_count);
}

std::string ExpectedGpus::Source() const {
  if (own_count) return core::StrCat(own_key, "=", *own_count);
  if (gfd_count) return core::StrCat(kube::kGpuCountLabel, "=", *gfd_count);
  return "";
}

std::string ExpectedGpus::Disagreement() const {
  if (!own_invalid.empty()) {
    return core::StrCat("the GPU count label ", own_key, "=", own_invalid,
                        " is not a number of GPUs");
  }
  if (!LabelsDisagree()) return "";
  return core::StrCat("the GPU count labels disagree: ", own_key, "=", *own_count, ", ",
                      kube::kGpuCountLabel, "=", *gfd_count);
}

std::optional<int64_t> ExpectedGpus::WantedGpus() const {
  if (!count || mig) return std::nullopt;
  return *count * replicas;
}

ExpectedGpus ExpectedGpusOf(const kube::NodeView& node, const CountLabel& label) {
  ExpectedGpus e;
  if (auto gfd = kube::FindLabel(node.labels, kube::kGpuCountLabel)) e.gfd_count = CountOf(*gfd);
  for (const std::string& key : label.Keys()) {
    // The operator may have chosen GFD's own key; then there is only one count.
    if (key == kube::kGpuCountLabel) break;
    auto own = kube::FindLabel(node.labels, key);
    if (!own) continue;
    e.own_key = key;
    e.own_count = CountOf(*own);
    if (!e.own_count) e.own_invalid = std::string(*own);
    break;
  }
  e.count = e.own_count ? e.own_count : e.gfd_count;
  if (auto replicas = kube::FindLabel(node.labels, "nvidia.com/gpu.replicas")) {
    if (auto n = CountOf(*replicas); n && *n > 0) e.replicas = *n;
  }
  auto strategy = kube::FindLabel(node.labels, "nvidia.com/mig.strategy");
  e.mig = strategy && *strategy != "none";
  return e;
}

bool IsGpuNode(const kube::NodeView& node, const CountLabel& label) {
  for (const kube::ResourceAmount& r : node.capacity) {
    if (r.milli > 0) return true;
  }
  if (kube::FindLabel(node.labels, kube::kGpuCountLabel)) return true;
  for (const std::string& key : label.Keys()) {
    if (kube::FindLabel(node.labels, key)) return true;
  }
  return false;
}

}  // namespace gpunode::cluster
