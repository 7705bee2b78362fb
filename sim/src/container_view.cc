#include "container_view.h"

#include <filesystem>
#include <map>
#include <system_error>
#include <utility>
#include <vector>

#include "messages.h"

namespace gpunode::sim {

bool keep_gpus_with_device_nodes(NodeModel& model, const std::string& dev_dir, std::string& error) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dev_dir, ec)) {
    error = str_cat("GPUNODE_SIM_DEVICE_NODES: ", quote(dev_dir),
                    " is not a directory that can be read; give the container's /dev");
    return false;
  }
  std::map<unsigned, unsigned> new_index;  // node index -> index in the container
  std::vector<GpuModel> kept;
  for (unsigned g = 0; g < model.gpus.size(); ++g) {
    unsigned minor = model.gpus[g].minor_number.value_or(g);
    if (!std::filesystem::exists(std::filesystem::path(dev_dir) / str_cat("nvidia", minor), ec))
      continue;
    new_index[g] = static_cast<unsigned>(kept.size());
    kept.push_back(std::move(model.gpus[g]));
  }
  model.gpus = std::move(kept);

  if (!model.pcie_levels.empty()) {
    std::vector<std::vector<nvmlGpuTopologyLevel_t>> levels;
    for (const auto& [row, unused_row] : new_index) {
      std::vector<nvmlGpuTopologyLevel_t>& kept_row = levels.emplace_back();
      for (const auto& [column, unused_column] : new_index)
        kept_row.push_back(model.pcie_levels[row][column]);
    }
    model.pcie_levels = std::move(levels);
  }

  std::vector<TimelineEvent> timeline;
  for (TimelineEvent& event : model.timeline) {
    auto kept_gpu = new_index.find(event.gpu);
    if (kept_gpu == new_index.end()) continue;
    event.gpu = kept_gpu->second;
    timeline.push_back(event);
  }
  model.timeline = std::move(timeline);
  return true;
}

}  // namespace gpunode::sim
