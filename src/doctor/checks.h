// The checks of each layer, bottom-up. Ids are a stable contract (docs/DOCTOR.md).
#pragma once

#include <vector>

#include "doctor/runner.h"

namespace gpunode::doctor {

std::vector<Check> PciChecks();
std::vector<Check> DriverChecks();
std::vector<Check> RuntimeChecks();
std::vector<Check> PluginChecks();
std::vector<Check> DraChecks();
std::vector<Check> KubeletChecks();
std::vector<Check> ImageGcChecks();
std::vector<Check> ContainerChecks();
std::vector<Check> TopologyChecks();

// Every check in report order: pci, driver, runtime, plugin, dra, kubelet, container, topology.
std::vector<Check> AllChecks();

}  // namespace gpunode::doctor
