// How many GPUs a node physically has, read from its labels. GPU feature discovery writes
// nvidia.com/gpu.count; operators keep their own scheme (gpu.count=8, as `gpunode labels
// --stable-labels` writes it) that no plugin upgrade changes. The operator's label wins when
// present, and a node whose two counts disagree is reported: one of them is wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kube/node_view.h"

namespace gpunode::cluster {

// The operator's count label: `prefix` + `key`, as `gpunode labels --stable-labels
// --stable-label-prefix` names it. Without a prefix, NFD publishes the label under
// feature.node.kubernetes.io/, so that key is read too (after the bare one).
struct CountLabel {
  std::string key = "gpu.count";
  std::string prefix;

  // The keys looked for, first match wins.
  std::vector<std::string> Keys() const;
};

struct ExpectedGpus {
  std::optional<int64_t> count;      // physical GPUs: the operator's label, else GFD's
  std::optional<int64_t> gfd_count;  // nvidia.com/gpu.count
  std::optional<int64_t> own_count;  // the operator's label, when present and a number
  std::string own_key;               // the key own_count (or own_invalid) came from
  std::string own_invalid;           // the operator's label's value when it is no count
  int64_t replicas = 1;              // nvidia.com/gpu.replicas (time-slicing)
  bool mig = false;                  // nvidia.com/mig.strategy single or mixed

  // Both labels are present and name different counts, or the operator's is no number.
  bool LabelsDisagree() const;
  // "gpu.count=8" or "nvidia.com/gpu.count=8": where `count` came from.
  std::string Source() const;
  // "the GPU count labels disagree: gpu.count=8, nvidia.com/gpu.count=7"; empty when they agree.
  std::string Disagreement() const;
  // nvidia.com/gpu the device plugin should advertise: count x replicas (not for MIG).
  std::optional<int64_t> WantedGpus() const;
};

ExpectedGpus ExpectedGpusOf(const kube::NodeView& node, const CountLabel& label = {});

// A node that advertises any NVIDIA resource or carries either GPU count label.
bool IsGpuNode(const kube::NodeView& node, const CountLabel& label = {});

}  // namespace gpunode::cluster
