// How many GPUs a node physically has, read from its labels. GPU feature discovery writes
// nvidia.com/gpu.count; operators keep their own scheme (gpu.count=8, as `gpunode labels
// --stable-labels` writes it) that no plugin upgrade changes. The operator's label wins when
// present, and a node whose two counts disagree is reported: one of them is wrong. Next to the
// operator's count, `gpunode labels` writes gpu.missing on a node short of a GPU: the PCI
// addresses of the GPUs the driver does not see, which the commands name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kube/missing_gpus_label.h"
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
  // The same for gpu.missing, under the same prefix.
  std::vector<std::string> MissingKeys() const;
};

struct ExpectedGpus {
  std::optional<int64_t> count;      // physical GPUs: the operator's label, else GFD's
  std::optional<int64_t> gfd_count;  // nvidia.com/gpu.count
  std::optional<int64_t> own_count;  // the operator's label, when present and a number
  std::string own_key;               // the key own_count (or own_invalid) came from
  std::string own_invalid;           // the operator's label's value when it is no count
  int64_t replicas = 1;              // nvidia.com/gpu.replicas (time-slicing)
  bool mig = false;                  // nvidia.com/mig.strategy single or mixed
  kube::MissingGpus missing;         // gpu.missing: the physical GPUs the driver does not see
  std::string missing_key;           // the key `missing` (or missing_invalid) came from
  std::string missing_value;         // its value, as the node has it
  std::string missing_invalid;       // why the value is not what `gpunode labels` writes

  // Both labels are present and name different counts (other than by the GPUs gpu.missing
  // names: GFD counts only the GPUs that answer), the operator's is no number, or gpu.missing
  // does not read.
  bool LabelsDisagree() const;
  // "gpu.count=8" or "nvidia.com/gpu.count=8": where `count` came from.
  std::string Source() const;
  // "the GPU count labels disagree: gpu.count=8, nvidia.com/gpu.count=7"; empty when they agree.
  std::string Disagreement() const;
  // nvidia.com/gpu the device plugin should advertise: count x replicas (not for MIG).
  std::optional<int64_t> WantedGpus() const;
  // "missing GPU: 0000:17:00.0 (gpu.missing=17-00.0)"; empty when none is.
  std::string MissingText() const;
};

ExpectedGpus ExpectedGpusOf(const kube::NodeView& node, const CountLabel& label = {});

// A node that advertises any NVIDIA resource or carries either GPU count label.
bool IsGpuNode(const kube::NodeView& node, const CountLabel& label = {});

}  // namespace gpunode::cluster
