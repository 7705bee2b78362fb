// `gpunode doctor`: walks a GPU node bottom-up (pci, driver, runtime, plugin, kubelet, container,
// topology) and names the broken layer. See docs/DOCTOR.md.
#pragma once

#include <vector>

#include "doctor/context.h"
#include "doctor/finding.h"

namespace gpunode::doctor {

// Every check, in report order; a check whose prerequisite failed is a skip "blocked by <id>".
std::vector<Finding> RunDoctor(const Context& context);

}  // namespace gpunode::doctor
