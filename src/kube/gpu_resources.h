// The names gpunode shares with NVIDIA's device plugin and GPU feature discovery: resource names,
// label keys and the taint that keeps CPU work off GPU nodes.
#pragma once

#include <string_view>

namespace gpunode::kube {

// Whole GPUs, as advertised by the device plugin.
inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";
// Every device-plugin resource NVIDIA advertises starts with this: nvidia.com/gpu,
// nvidia.com/gpu.shared (time-slicing/MPS with renamed resources), nvidia.com/mig-<profile>.
inline constexpr std::string_view kNvidiaResourcePrefix = "nvidia.com/";

// Number of physical GPUs, written by GPU feature discovery from the hardware.
inline constexpr std::string_view kGpuCountLabel = "nvidia.com/gpu.count";
// Maintenance state of the node's GPUs; "draining" while `gpunode cluster drain` runs.
inline constexpr std::string_view kGpuStateLabel = "nvidia.com/gpu.state";
inline constexpr std::string_view kGpuStateDraining = "draining";
// RFC 3339 time at which `gpunode cluster drain` labelled the node, so audit can tell pods that
// arrived after the drain began from those that were already there.
inline constexpr std::string_view kDrainStartedAnnotation = "gpunode.io/drain-started-at";
// The node annotations gpunode keeps its own state in start with this.
inline constexpr std::string_view kGpunodeAnnotationPrefix = "gpunode.io/";
// "true" when `gpunode cluster drain --cordon` cordoned a schedulable node, so `restore` undoes
// that cordon and no other (one a person set stays).
inline constexpr std::string_view kDrainCordonedAnnotation = "gpunode.io/drain-cordoned";
// The pod annotations a drain or an upgrade leaves on each GPU pod of the node it takes out of
// service (cluster/drain_notice.h): the node's name, and the RFC 3339 time from which the pod
// is evicted when the operator set a deadline (absent: the pod is waited for until it ends).
inline constexpr std::string_view kDrainNoticeNodeAnnotation = "gpunode.io/node-draining";
inline constexpr std::string_view kDrainNoticeDeadlineAnnotation = "gpunode.io/eviction-deadline";

// The taint GPU nodes carry so that only pods which tolerate it (GPU pods) land there.
inline constexpr std::string_view kGpuTaintKey = "nvidia.com/gpu";

inline bool IsNvidiaResource(std::string_view name) {
  return name.size() > kNvidiaResourcePrefix.size() && name.starts_with(kNvidiaResourcePrefix);
}

}  // namespace gpunode::kube
