#include "plugin/allocation/replica_policy.h"

#include <algorithm>
#include <map>
#include <set>

namespace gpunode::plugin {

using plugin_config::SharedAllocationPolicy;

std::vector<size_t> PickShared(const Resource& resource, const std::vector<size_t>& available,
                               const std::vector<size_t>& required, size_t size,
                               SharedAllocationPolicy policy) {
  // Bases (GPUs or MIG devices) by UUID, in device order.
  std::map<std::string, size_t> base_order;
  std::map<std::string, int> total;
  for (const PluginDevice& device : resource.devices) {
    base_order.emplace(device.uuid, base_order.size());
    ++total[device.uuid];
  }
  std::map<std::string, std::set<size_t>> free;  // base -> free device positions, ascending
  for (size_t position : available) free[resource.devices[position].uuid].insert(position);

  std::vector<size_t> out;
  std::map<std::string, int> picked;
  auto take = [&](size_t position) {
    const std::string& base = resource.devices[position].uuid;
    if (std::find(out.begin(), out.end(), position) != out.end()) return;
    out.push_back(position);
    free[base].erase(position);
    ++picked[base];
  };
  for (size_t position : required) take(position);

  while (out.size() < size) {
    const std::string* best = nullptr;
    int best_used = 0;
    for (const auto& [base, positions] : free) {
      if (positions.empty()) continue;
      int used = total[base] - static_cast<int>(positions.size());
      if (best != nullptr) {
        bool better;
        if (used != best_used) {
          better = policy == SharedAllocationPolicy::kPacked ? used > best_used : used < best_used;
        } else if (picked[base] != picked[*best]) {
          better = picked[base] < picked[*best];
        } else {
          better = base_order[base] < base_order[*best];
        }
        if (!better) continue;
      }
      best = &base;
      best_used = used;
    }
    if (best == nullptr) break;  // fewer free devices than asked; the caller checked
    take(*free[*best].begin());
  }
  return out;
}

}  // namespace gpunode::plugin
