#include "metrics/attribution.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpunode::metrics {
namespace {

// "GPU-x::3" -> {"GPU-x", "3"}.
std::pair<std::string_view, std::string_view> SplitReplica(std::string_view id) {
  size_t at = id.rfind("::");
  if (at == std::string_view::npos) return {id, ""};
  return {id.substr(0, at), id.substr(at + 2)};
}

bool SameContainer(const DeviceAllocation& a, const DeviceAllocation& b) {
  return a.namespace_name == b.namespace_name && a.pod == b.pod && a.container == b.container;
}

}  // namespace

Attribution::Attribution(const std::vector<ListedDevices>& listed,
                         const std::vector<host::CheckpointAllocation>& checkpoint) {
  // (device ID, container name) -> pod UIDs. The checkpoint can still hold entries of pods that are
  // gone; keying by the full ID (with its replica) and the container keeps those from matching a
  // different active container.
  absl::flat_hash_map<std::string, std::vector<std::string>> uids;
  for (const host::CheckpointAllocation& entry : checkpoint) {
    if (entry.pod_uid.empty()) continue;
    for (const std::string& id : entry.device_ids) {
      std::vector<std::string>& list = uids[absl::StrCat(id, "\n", entry.container)];
      if (std::find(list.begin(), list.end(), entry.pod_uid) == list.end())
        list.push_back(entry.pod_uid);
    }
  }
  for (const ListedDevices& devices : listed) {
    if (devices.dra) {
      // A claim's device has no device manager checkpoint entry: its pod is known by name only.
      by_dra_device_[devices.dra->device].push_back(DeviceAllocation{
          devices.namespace_name, devices.pod, devices.container, "", {}, devices.dra});
      continue;
    }
    for (const std::string& id : devices.device_ids) {
      auto [base, replica] = SplitReplica(id);
      DeviceAllocation allocation{devices.namespace_name, devices.pod, devices.container,
                                  std::string(replica),   {},          {}};
      if (auto it = uids.find(absl::StrCat(id, "\n", devices.container)); it != uids.end())
        allocation.pod_uids = it->second;
      by_device_[std::string(base)].push_back(std::move(allocation));
    }
  }
}

std::vector<const DeviceAllocation*> Attribution::Of(std::string_view uuid,
                                                     std::optional<unsigned> index) const {
  std::vector<const DeviceAllocation*> out;
  auto add = [&](std::string_view key) {
    if (key.empty()) return;
    if (auto it = by_device_.find(absl::string_view(key.data(), key.size()));
        it != by_device_.end()) {
      for (const DeviceAllocation& allocation : it->second) out.push_back(&allocation);
    }
  };
  add(uuid);
  if (index) add(absl::StrCat(*index));
  return out;
}

std::vector<const DeviceAllocation*> Attribution::OfDraDevice(std::string_view name) const {
  std::vector<const DeviceAllocation*> out;
  if (auto it = by_dra_device_.find(absl::string_view(name.data(), name.size()));
      it != by_dra_device_.end()) {
    for (const DeviceAllocation& allocation : it->second) out.push_back(&allocation);
  }
  return out;
}

ProcessVerdict ClassifyProcess(const std::optional<CgroupIdentity>& cgroup,
                               const std::vector<const DeviceAllocation*>& holders) {
  if (!cgroup) return {};
  if (cgroup->pod_uid.empty()) return {Ownership::kOrphan, nullptr, "not_in_pod"};
  if (holders.empty()) return {Ownership::kOrphan, nullptr, "gpu_not_allocated"};

  const DeviceAllocation* unknown_uid = nullptr;
  bool several_unknown = false;
  for (const DeviceAllocation* holder : holders) {
    if (holder->pod_uids.empty()) {
      if (unknown_uid != nullptr && !SameContainer(*unknown_uid, *holder)) several_unknown = true;
      if (unknown_uid == nullptr) unknown_uid = holder;
      continue;
    }
    if (std::find(holder->pod_uids.begin(), holder->pod_uids.end(), cgroup->pod_uid) !=
        holder->pod_uids.end()) {
      return {Ownership::kPod, holder, ""};
    }
  }
  // Every holder's UID is known and none is the process's pod: a process of a pod that no longer
  // holds the GPU (or never did) shares it with the pod that does.
  if (unknown_uid == nullptr) return {Ownership::kOrphan, nullptr, "gpu_allocated_to_other_pod"};
  // Without the checkpoint only the device links the process to a pod, as dcgm-exporter does; that
  // names the pod when one container holds the device, and nobody when several share it.
  if (several_unknown) return {};
  return {Ownership::kPod, unknown_uid, ""};
}

}  // namespace gpunode::metrics
