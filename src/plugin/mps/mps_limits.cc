#include "plugin/mps/mps_limits.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace gpunode::plugin {

unsigned MpsMaxClients(int cc_major) { return cc_major >= 7 ? 48 : 16; }

absl::StatusOr<MpsLimits> ComputeMpsLimits(const std::string& resource, int replicas,
                                           const std::vector<MpsGpu>& gpus) {
  if (replicas < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("sharing.mps: ", resource, ": number of replicas must be >= 2"));
  }
  MpsLimits limits;
  limits.replicas = replicas;
  limits.active_thread_percentage = 100 / replicas;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const MpsGpu& gpu = gpus[i];
    MpsGpuLimit limit;
    limit.gpu = gpu;
    limit.position = static_cast<unsigned>(i);
    limit.max_clients = MpsMaxClients(gpu.cc_major);
    if (static_cast<unsigned>(replicas) > limit.max_clients) {
      return absl::InvalidArgumentError(
          absl::StrCat("sharing.mps: ", resource, ": ", replicas, " replicas is more than the ",
                       limit.max_clients, " clients MPS serves on GPU ", gpu.index, " (", gpu.name,
                       ", compute capability ", gpu.cc_major, ".", gpu.cc_minor, "); use at most ",
                       limit.max_clients));
    }
    if (gpu.memory_bytes == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("sharing.mps: ", resource, ": GPU ", gpu.index,
                       " reports no memory size, so no pinned memory limit can be set"));
    }
    limit.pinned_mib = gpu.memory_bytes / (uint64_t{1} << 20) / static_cast<uint64_t>(replicas);
    limits.gpus.push_back(limit);
  }
  return limits;
}

std::vector<std::string> DescribeMpsLimits(const std::string& resource, const MpsLimits& limits) {
  const std::string threads = limits.active_thread_percentage
                                  ? absl::StrCat(*limits.active_thread_percentage, "% of the SMs")
                                  : "default share of the SMs";
  std::vector<std::string> lines;
  for (const MpsGpuLimit& g : limits.gpus) {
    std::string line = absl::StrCat(
        resource, ": GPU ", g.gpu.index, " (", g.gpu.uuid, ", ", g.gpu.name, "): ", threads, ", ",
        g.pinned_mib ? absl::StrCat(*g.pinned_mib, " MiB pinned memory per client")
                     : "no pinned memory limit");
    if (limits.replicas > 0) {
      absl::StrAppend(&line, ", ", limits.replicas, " of ", g.max_clients, " clients");
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace gpunode::plugin
