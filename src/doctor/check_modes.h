// Where doctor runs decides which checks mean something: on the node every layer but container;
// inside a pod (--in-container) only the container layer, since the node's files, sockets and
// PCI bus are not the pod's. The others stay in the report as a skip that says why.
#pragma once

#include <vector>

#include "doctor/context.h"
#include "doctor/runner.h"

namespace gpunode::doctor {

inline constexpr char kHostOnlySummary[] = "host-only: not run inside a container";
inline constexpr char kPodOnlySummary[] = "not run inside a pod (give --in-container there)";

// `checks` with those that do not apply where `options` says doctor runs replaced by a skip.
std::vector<Check> ChecksForMode(std::vector<Check> checks, const DoctorOptions& options);

}  // namespace gpunode::doctor
