#include "doctor/check_modes.h"

#include <string>

namespace gpunode::doctor {

std::vector<Check> ChecksForMode(std::vector<Check> checks, const DoctorOptions& options) {
  for (Check& check : checks) {
    bool container_check = check.layer == "container";
    if (container_check == options.in_container) continue;
    std::string summary = options.in_container ? kHostOnlySummary : kPodOnlySummary;
    std::string evidence =
        options.in_container ? "the node's layers are checked by gpunode doctor on the node" : "";
    check.needs.clear();  // a skip of its own, not "blocked by" another left-out check
    check.run = HostCheck([summary, evidence](const Context&) { return Skip(summary, evidence); });
  }
  return checks;
}

}  // namespace gpunode::doctor
