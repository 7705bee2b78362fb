#include "labels/gfd_labels.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "labels/sanitize.h"

namespace gpunode::labels {
namespace {

constexpr const char* kGpuResource = "nvidia.com/gpu";

// One resource's labels (<resource>.product, .count, ...), as GFD's resourceLabeler makes them.
// `sharing` is null for the full-GPU labels of MIG-enabled GPUs, which are never shared.
class ResourceLabeler {
 public:
  ResourceLabeler(std::string resource, const SharingConfig* sharing)
      : resource_(std::move(resource)), sharing_(sharing) {}

  void Set(Labels& labels, std::string_view suffix, const std::string& value) const {
    labels[absl::StrCat(resource_, ".", std::string(suffix))] = SanitizeLabelValue(value);
  }

  void Base(Labels& labels, int count, const std::vector<std::string>& parts) const {
    const ReplicatedResource* shared = sharing_ != nullptr ? sharing_->Find(resource_) : nullptr;
    int replicas = sharing_ == nullptr ? 0 : shared != nullptr ? shared->replicas : 1;
    std::vector<std::string> product;
    for (const std::string& part : parts) {
      if (std::string clean = SanitizeLabelValue(part); !clean.empty()) product.push_back(clean);
    }
    if (shared != nullptr && shared->replicas > 1 && !shared->renamed) product.push_back("SHARED");
    Set(labels, "product", absl::StrJoin(product, "-"));
    Set(labels, "count", absl::StrCat(count));
    Set(labels, "replicas", absl::StrCat(replicas));
    Set(labels, "sharing-strategy",
        sharing_ != nullptr && replicas > 1 ? sharing_->strategy : std::string("none"));
  }

 private:
  std::string resource_;
  const SharingConfig* sharing_;
};

void FullGpuLabels(const GpuFacts& gpu, int count, const SharingConfig* sharing, Labels& labels) {
  ResourceLabeler labeler(kGpuResource, sharing);
  labeler.Base(labels, count, {gpu.name});
  if (gpu.memory_mib != 0) labeler.Set(labels, "memory", absl::StrCat(gpu.memory_mib));
  if (gpu.compute_major != 0) {
    labeler.Set(labels, "family", GpuFamily(gpu.compute_major, gpu.compute_minor));
    labeler.Set(labels, "compute.major", absl::StrCat(gpu.compute_major));
    labeler.Set(labels, "compute.minor", absl::StrCat(gpu.compute_minor));
  }
}

void MigLabels(const std::string& resource, const SharingConfig& sharing, int count,
               const std::string& model, const MigDeviceFacts& mig, Labels& labels) {
  ResourceLabeler labeler(resource, &sharing);
  labeler.Base(labels, count, {model, "MIG", mig.profile});
  const nvmlDeviceAttributes_t& a = mig.attributes;
  labeler.Set(labels, "memory", absl::StrCat(a.memorySizeMB));
  labeler.Set(labels, "multiprocessors", absl::StrCat(a.multiprocessorCount));
  labeler.Set(labels, "slices.gi", absl::StrCat(a.gpuInstanceSliceCount));
  labeler.Set(labels, "slices.ci", absl::StrCat(a.computeInstanceSliceCount));
  labeler.Set(labels, "engines.copy", absl::StrCat(a.sharedCopyEngineCount));
  labeler.Set(labels, "engines.decoder", absl::StrCat(a.sharedDecoderCount));
  labeler.Set(labels, "engines.encoder", absl::StrCat(a.sharedEncoderCount));
  labeler.Set(labels, "engines.jpeg", absl::StrCat(a.sharedJpegCount));
  labeler.Set(labels, "engines.ofa", absl::StrCat(a.sharedOfaCount));
}

// GFD labels every model; where models differ the last labeler wins. Here the lowest-index GPU
// without MIG wins, then the lowest-index MIG-enabled one, so the result does not depend on map
// order.
void ResourceLabels(const NodeFacts& facts, const GfdOptions& options, Labels& labels) {
  std::map<std::string, int> counts;
  for (const GpuFacts& gpu : facts.gpus) ++counts[gpu.name];
  std::vector<const GpuFacts*> mig_models, full_models;
  std::set<std::string> seen_mig, seen_full;
  for (const GpuFacts& gpu : facts.gpus) {
    if (gpu.mig_enabled && seen_mig.insert(gpu.name).second) mig_models.push_back(&gpu);
    if (!gpu.mig_enabled && seen_full.insert(gpu.name).second) full_models.push_back(&gpu);
  }
  for (auto it = mig_models.rbegin(); it != mig_models.rend(); ++it)
    FullGpuLabels(**it, counts[(*it)->name], nullptr, labels);
  for (auto it = full_models.rbegin(); it != full_models.rend(); ++it)
    FullGpuLabels(**it, counts[(*it)->name], &options.sharing, labels);
}

void InvalidSingleLabels(const GpuFacts& gpu, Labels& labels) {
  ResourceLabeler labeler(kGpuResource, nullptr);
  labeler.Set(labels, "product", absl::StrCat(SanitizeLabelValue(gpu.name), "-MIG-INVALID"));
  labeler.Set(labels, "count", "0");
  labeler.Set(labels, "replicas", "0");
  labeler.Set(labels, "memory", "0");
  labels[absl::StrCat(kGpuResource, ".sharing-strategy")] = "";
}

void SingleStrategyLabels(const NodeFacts& facts, const GfdOptions& options, Labels& labels) {
  const GpuFacts* first_mig = nullptr;
  bool any_disabled = false, any_empty = false;
  std::map<std::string, std::pair<int, const MigDeviceFacts*>> profiles;
  std::map<std::string, std::string> model_of;
  for (const GpuFacts& gpu : facts.gpus) {
    if (!gpu.mig_enabled) {
      any_disabled = true;
      continue;
    }
    if (first_mig == nullptr) first_mig = &gpu;
    if (gpu.migs.empty()) any_empty = true;
    for (const MigDeviceFacts& mig : gpu.migs) {
      auto& [count, example] = profiles[mig.profile];
      if (count++ == 0) {
        example = &mig;
        model_of[mig.profile] = gpu.name;
      }
    }
  }
  // No MIG-enabled GPU: single is the same as none.
  if (first_mig == nullptr) return;
  if (any_empty || any_disabled || profiles.size() != 1) {
    InvalidSingleLabels(*first_mig, labels);
    return;
  }
  const auto& [profile, entry] = *profiles.begin();
  MigLabels(kGpuResource, options.sharing, entry.first, model_of[profile], *entry.second, labels);
}

void MixedStrategyLabels(const NodeFacts& facts, const GfdOptions& options, Labels& labels) {
  std::map<std::string, std::pair<int, const MigDeviceFacts*>> profiles;
  std::map<std::string, std::string> model_of;
  for (const GpuFacts& gpu : facts.gpus) {
    if (!gpu.mig_enabled) continue;
    for (const MigDeviceFacts& mig : gpu.migs) {
      auto& [count, example] = profiles[mig.profile];
      if (count++ == 0) {
        example = &mig;
        model_of[mig.profile] = gpu.name;
      }
    }
  }
  for (const auto& [profile, entry] : profiles) {
    MigLabels(absl::StrCat("nvidia.com/mig-", profile), options.sharing, entry.first,
              model_of[profile], *entry.second, labels);
  }
}

void VersionLabels(const NodeFacts& facts, Labels& labels) {
  if (facts.driver_version) {
    std::vector<std::string> parts = absl::StrSplit(*facts.driver_version, '.');
    // GFD needs "major.minor" or "major.minor.revision".
    if (parts.size() == 2 || parts.size() == 3) {
      labels["nvidia.com/cuda.driver-version.full"] = SanitizeLabelValue(*facts.driver_version);
      labels["nvidia.com/cuda.driver-version.major"] = SanitizeLabelValue(parts[0]);
      labels["nvidia.com/cuda.driver-version.minor"] = SanitizeLabelValue(parts[1]);
      // The deprecated keys GFD still sets, which older selectors use.
      labels["nvidia.com/cuda.driver.major"] = SanitizeLabelValue(parts[0]);
      labels["nvidia.com/cuda.driver.minor"] = SanitizeLabelValue(parts[1]);
      // A two-part version (Windows drivers, 456.71) has an empty revision, which GFD still
      // writes: a selector on the key matches the same nodes under both labellers.
      std::string revision = parts.size() == 3 ? SanitizeLabelValue(parts[2]) : "";
      labels["nvidia.com/cuda.driver-version.revision"] = revision;
      labels["nvidia.com/cuda.driver.rev"] = revision;
    }
  }
  // GFD's "runtime" version is the CUDA version the driver supports
  // (nvmlSystemGetCudaDriverVersion), not a CUDA toolkit installed anywhere.
  if (facts.cuda_driver_version) {
    int major = *facts.cuda_driver_version / 1000;
    int minor = (*facts.cuda_driver_version % 1000) / 10;
    labels["nvidia.com/cuda.runtime-version.full"] = absl::StrCat(major, ".", minor);
    labels["nvidia.com/cuda.runtime-version.major"] = absl::StrCat(major);
    labels["nvidia.com/cuda.runtime-version.minor"] = absl::StrCat(minor);
    labels["nvidia.com/cuda.runtime.major"] = absl::StrCat(major);
    labels["nvidia.com/cuda.runtime.minor"] = absl::StrCat(minor);
  }
}

}  // namespace

std::string GpuFamily(int major, int minor) {
  switch (major) {
    case 1:
      return "tesla";
    case 2:
      return "fermi";
    case 3:
      return "kepler";
    case 5:
      return "maxwell";
    case 6:
      return "pascal";
    case 7:
      return minor < 5 ? "volta" : "turing";
    case 8:
      return minor < 9 ? "ampere" : "ada-lovelace";
    case 9:
      return "hopper";
    case 10:
    case 12:
      return "blackwell";
    case 13:
      return "rubin";
  }
  return "undefined";
}

Labels GfdLabels(const NodeFacts& facts, const GfdOptions& options) {
  Labels labels;
  if (options.timestamp) labels[kTimestampLabel] = absl::StrCat(*options.timestamp);
  std::string machine = SanitizeLabelValue(options.machine_type);
  labels["nvidia.com/gpu.machine"] = machine.empty() ? "unknown" : machine;
  VersionLabels(facts, labels);
  bool mig_capable = false;
  for (const GpuFacts& gpu : facts.gpus) mig_capable |= gpu.mig_capable;
  labels["nvidia.com/mig.capable"] = mig_capable ? "true" : "false";
  if (facts.gpus.empty()) return labels;
  labels["nvidia.com/gpu.present"] = "true";
  ResourceLabels(facts, options, labels);
  if (options.sharing.strategy == "mps") {
    // GFD's labeller fails outright on a MIG-enabled GPU here; the node says "not capable"
    // instead and keeps its other labels (MPS does not run on MIG devices).
    bool mig_enabled = false;
    for (const GpuFacts& gpu : facts.gpus) mig_enabled |= gpu.mig_enabled;
    labels["nvidia.com/mps.capable"] = mig_enabled ? "false" : "true";
  } else {
    // GFD says so outright when the config does not share through MPS.
    labels["nvidia.com/mps.capable"] = "false";
  }
  switch (options.mig_strategy) {
    case plugin_config::MigStrategy::kNone:
      break;
    case plugin_config::MigStrategy::kSingle:
      labels["nvidia.com/mig.strategy"] = "single";
      SingleStrategyLabels(facts, options, labels);
      break;
    case plugin_config::MigStrategy::kMixed:
      labels["nvidia.com/mig.strategy"] = "mixed";
      MixedStrategyLabels(facts, options, labels);
      break;
  }
  return labels;
}

}  // namespace gpunode::labels
