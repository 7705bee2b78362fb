// What each MPS client of a GPU may use: a share of the SMs (active thread percentage) and of
// the GPU's memory (pinned device memory limit), from the resource's replicas. Unlike NVIDIA's
// daemon, which divides one total, each GPU's limit comes from that GPU's own memory; and the
// client cap is MPS's own: 48 clients per GPU from Volta (compute capability 7.0) on, 16 before.
// A DRA claim's limits are given instead, and each may be left to the daemon's default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::plugin {

struct MpsGpu {
  std::string uuid;
  unsigned index = 0;     // NVML index
  std::string name = {};  // "Tesla V100-SXM2-16GB"
  uint64_t memory_bytes = 0;
  int cc_major = 0;
  int cc_minor = 0;
};

struct MpsGpuLimit {
  MpsGpu gpu;
  unsigned position = 0;  // the device index the daemon sees (position in CUDA_VISIBLE_DEVICES)
  std::optional<uint64_t> pinned_mib;  // none: nothing is sent, the daemon sets no limit
  unsigned max_clients = 0;
};

struct MpsLimits {
  int replicas = 0;  // 0 for a claim, whose clients are its containers rather than replicas
  // 100 / replicas, whole percent; none: nothing is sent, the daemon's default stays.
  std::optional<int> active_thread_percentage;
  std::vector<MpsGpuLimit> gpus;
};

// MPS serves at most this many clients on one GPU of this compute capability.
unsigned MpsMaxClients(int cc_major);

// Fails (naming the GPU, its compute capability and the fix) when `replicas` exceeds a GPU's
// client cap or a GPU reports no memory.
absl::StatusOr<MpsLimits> ComputeMpsLimits(const std::string& resource, int replicas,
                                           const std::vector<MpsGpu>& gpus);

// One line per GPU for logs and --check-config:
// "nvidia.com/gpu: GPU 0 (GPU-…, Tesla V100): 25% of the SMs, 4096 MiB pinned, 4 of 48 clients";
// for a claim (`resource` "claim <id>", no replicas) "... default share of the SMs, no pinned
// memory limit" where a limit is left to the daemon.
std::vector<std::string> DescribeMpsLimits(const std::string& resource, const MpsLimits& limits);

}  // namespace gpunode::plugin
