// The audit finding about GPU pods waiting on their images: pulls on GPU nodes slower than a
// threshold, and pulls that keep failing, one finding per image and node.
#pragma once

#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "cluster/finding.h"
#include "kube/cluster_snapshot.h"

namespace gpunode::cluster {

inline constexpr std::string_view kFindingSlowImagePull = "slow-image-pull";

void AddImagePullFindings(const kube::ClusterSnapshot& snapshot, absl::Duration slow_pull,
                          std::vector<Finding>& findings);

}  // namespace gpunode::cluster
