#include "doctor/checks.h"

#include "doctor/check_modes.h"
#include "doctor/doctor.h"

namespace gpunode::doctor {

std::vector<Check> AllChecks() {
  std::vector<Check> all;
  for (auto layer : {PciChecks, DriverChecks, RuntimeChecks, PluginChecks, DraChecks, KubeletChecks,
                     ImageGcChecks, ContainerChecks, TopologyChecks}) {
    for (Check& check : layer()) all.push_back(std::move(check));
  }
  return all;
}

std::vector<Finding> RunDoctor(const Context& context) {
  return RunChecks(ChecksForMode(AllChecks(), context.options()), context);
}

}  // namespace gpunode::doctor
