// What gpunode keeps of a PodDisruptionBudget: enough to say which budget blocks an eviction.
#pragma once

#include <cstdint>
#include <string_view>

#include "kube/label_selector.h"

namespace gpunode::kube {

struct PdbView {
  std::string_view ns;
  std::string_view name;
  LabelSelector selector;
  int64_t disruptions_allowed = 0;
  int64_t current_healthy = 0;
  int64_t desired_healthy = 0;
};

}  // namespace gpunode::kube
