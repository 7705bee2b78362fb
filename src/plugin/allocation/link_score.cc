#include "plugin/allocation/link_score.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"

namespace gpunode::plugin {

int PciePoints(nvmlGpuTopologyLevel_t level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
      return 60;
    case NVML_TOPOLOGY_SINGLE:
      return 50;
    case NVML_TOPOLOGY_MULTIPLE:
      return 40;
    case NVML_TOPOLOGY_HOSTBRIDGE:
      return 30;
    case NVML_TOPOLOGY_NODE:
      return 20;
    case NVML_TOPOLOGY_SYSTEM:
      return 10;
  }
  return 0;
}

int PciePoints(absl::string_view label) {
  if (label == "X") return PciePoints(NVML_TOPOLOGY_INTERNAL);
  if (label == "PIX") return PciePoints(NVML_TOPOLOGY_SINGLE);
  if (label == "PXB") return PciePoints(NVML_TOPOLOGY_MULTIPLE);
  if (label == "PHB") return PciePoints(NVML_TOPOLOGY_HOSTBRIDGE);
  if (label == "NODE") return PciePoints(NVML_TOPOLOGY_NODE);
  if (label == "SYS" || label == "SOC") return PciePoints(NVML_TOPOLOGY_SYSTEM);
  return 0;
}

std::optional<int> NvLinks(absl::string_view label) {
  int links = 0;
  if (!absl::ConsumePrefix(&label, "NV") || !absl::SimpleAtoi(label, &links) || links <= 0) {
    return std::nullopt;
  }
  return links;
}

}  // namespace gpunode::plugin
