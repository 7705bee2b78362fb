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

std::vector<std::string> CountLabel::MissingKeys() const {
  std::string missing(kube::kMissingGpusKey);
  if (!prefix.empty()) return {prefix + missing};
  return {missing, std::string(kNfdFeaturePrefix) + missing};
}

bool ExpectedGpus::LabelsDisagree() const {
  if (!own_invalid.empty() || !missing_invalid.empty()) return true;
  if (!own_count || !gfd_count || *own_count == *gfd_count) return false;
  // A GPU that fell off the bus: the operator's count keeps it, GFD's does not.
  return missing.empty() || *own_count - missing.Count() != *gfd_count;
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
  if (!missing_invalid.empty()) {
    return core::StrCat("the label ", missing_key, "=", missing_value,
                        " does not read: ", missing_invalid);
  }
  if (!LabelsDisagree()) return "";
  std::string text = core::StrCat("the GPU count labels disagree: ", own_key, "=", *own_count, ", ",
                                  kube::kGpuCountLabel, "=", *gfd_count);
  if (!missing.empty()) core::StrAppend(&text, ", ", missing_key, "=", missing_value);
  return text;
}

std::string ExpectedGpus::MissingText() const {
  if (missing.empty()) return "";
  return core::StrCat("missing GPU", missing.Count() == 1 ? "" : "s", ": ", missing.Describe(),
                      " (", missing_key, "=", missing_value, ")");
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
  for (const std::string& key : label.MissingKeys()) {
    auto value = kube::FindLabel(node.labels, key);
    if (!value) continue;
    e.missing_key = key;
    e.missing_value = std::string(*value);
    absl::StatusOr<kube::MissingGpus> missing = kube::ParseMissingGpus(*value);
    if (missing.ok()) {
      e.missing = *std::move(missing);
    } else {
      e.missing_invalid = std::string(core::View(missing.status().message()));
    }
    break;
  }
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
