#include "labels/stable_labels.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "labels/sanitize.h"

namespace gpunode::labels {

std::string AcceleratorName(std::string_view model) {
  std::string lower = absl::AsciiStrToLower(absl::string_view(model.data(), model.size()));
  absl::string_view rest = lower;
  absl::ConsumePrefix(&rest, "nvidia ");
  return SanitizeLabelValue(absl::StrCat("nvidia-", rest));
}

uint64_t MarketedMemoryGiB(uint64_t memory_mib) {
  double ecc_hidden_gib = static_cast<double>(memory_mib) * 16.0 / 15.0 / 1024.0;
  double multiple = std::round(ecc_hidden_gib / 8.0) * 8.0;
  if (multiple > 0 && std::fabs(ecc_hidden_gib - multiple) <= 0.005 * multiple)
    return static_cast<uint64_t>(multiple);
  return (memory_mib + 1023) / 1024;
}

Labels StableLabels(const NodeFacts& facts, std::string_view prefix) {
  Labels labels;
  std::string p(prefix);
  // The physical count even when no GPU answers: that node is the one to hold back.
  unsigned count = std::max<unsigned>(facts.physical_count, facts.gpus.size());
  if (count > 0) labels[p + "gpu.count"] = absl::StrCat(count);
  // Only when short of a GPU: a healthy node's labels stay as they were.
  if (kube::MissingGpus missing = MissingGpusOf(facts); !missing.empty())
    labels[p + std::string(kube::kMissingGpusKey)] = kube::FormatMissingGpus(missing);
  if (facts.gpus.empty()) return labels;
  const GpuFacts& model = facts.gpus.front();
  labels[p + "accelerator"] = AcceleratorName(model.name);
  if (model.memory_mib != 0)
    labels[p + "gpu.memory"] = absl::StrCat(MarketedMemoryGiB(model.memory_mib), "g");
  return labels;
}

}  // namespace gpunode::labels
