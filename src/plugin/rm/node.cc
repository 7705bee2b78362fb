#include "plugin/rm/node.h"

#include "core/log.h"
#include "core/status_macros.h"
#include "nvml/system.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {

absl::StatusOr<Node> NodeFromSnapshot(
    const gpu::NodeSnapshot& snapshot, const std::vector<std::optional<unsigned>>& minors,
    const std::function<std::optional<nvmlGpuTopologyLevel_t>(size_t, size_t)>& pcie_level) {
  Node node;
  std::vector<size_t> kept;  // snapshot positions of node.gpus
  for (size_t i = 0; i < snapshot.gpus.size(); ++i) {
    const gpu::GpuSnapshot& g = snapshot.gpus[i];
    if (g.lost || g.uuid.empty()) {
      spdlog::warn("GPU {} does not answer (fell off the bus?); it is not advertised", g.index);
      continue;
    }
    NodeGpu gpu;
    gpu.index = g.index;
    gpu.uuid = g.uuid;
    gpu.minor = i < minors.size() && minors[i] ? *minors[i] : g.index;
    gpu.numa_node = g.numa_node;
    gpu.mig_enabled = g.mig_enabled.value_or(false);
    for (size_t m = 0; m < g.mig_devices.size(); ++m) {
      const gpu::MigDeviceSnapshot& mig = g.mig_devices[m];
      if (mig.uuid.empty() || mig.profile.empty()) {
        spdlog::warn("GPU {}: MIG device {} has no UUID or profile; it is not advertised", g.index,
                     m);
        continue;
      }
      gpu.migs.push_back({mig.uuid, mig.profile, mig.gi_id, mig.ci_id, static_cast<unsigned>(m)});
    }
    node.gpus.push_back(std::move(gpu));
    kept.push_back(i);
  }
  size_t n = kept.size();
  node.scores.assign(n, std::vector<int>(n, 0));
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      size_t sa = kept[a], sb = kept[b];
      std::optional<std::string> label;
      if (sa < snapshot.topology.size() && sb < snapshot.topology[sa].size()) {
        label = snapshot.topology[sa][sb];
      }
      int score = 0;
      if (label) {
        if (std::optional<int> links = NvLinks(*label)) {
          score = *links * kPointsPerNvLink;
          if (std::optional<nvmlGpuTopologyLevel_t> level = pcie_level(sa, sb)) {
            score += PciePoints(*level);
          }
        } else {
          score = PciePoints(*label);
        }
      }
      node.scores[a][b] = node.scores[b][a] = score;
    }
  }
  return node;
}

absl::StatusOr<Node> ReadNode(const nvml::Library& library, const core::HostRoot& host) {
  ASSIGN_OR_RETURN(gpu::NodeSnapshot snapshot, gpu::ReadNodeSnapshot(library, host));
  std::vector<std::optional<nvml::Device>> devices;
  std::vector<std::optional<unsigned>> minors;
  for (const gpu::GpuSnapshot& g : snapshot.gpus) {
    absl::StatusOr<nvml::Device> device = nvml::DeviceAt(library, g.index);
    devices.push_back(device.ok() ? std::optional<nvml::Device>(*device) : std::nullopt);
    std::optional<unsigned> minor;
    if (device.ok() && !g.lost) {
      if (absl::StatusOr<unsigned> m = device->MinorNumber(); m.ok()) minor = *m;
    }
    minors.push_back(minor);
  }
  return NodeFromSnapshot(
      snapshot, minors, [&](size_t a, size_t b) -> std::optional<nvmlGpuTopologyLevel_t> {
        if (!devices[a] || !devices[b]) return std::nullopt;
        absl::StatusOr<nvmlGpuTopologyLevel_t> level = devices[a]->CommonAncestor(*devices[b]);
        if (!level.ok()) return std::nullopt;
        return *level;
      });
}

std::vector<health::MonitoredGpu> MonitoredGpus(const Node& node) {
  std::vector<health::MonitoredGpu> out;
  for (const NodeGpu& gpu : node.gpus) {
    health::MonitoredGpu& watched = out.emplace_back();
    watched.index = gpu.index;
    watched.uuid = gpu.uuid;
    for (const MigSlice& mig : gpu.migs) watched.migs.push_back({mig.gi, mig.ci});
  }
  return out;
}

}  // namespace gpunode::plugin
