// Reads the report `gpunode doctor -o json` prints (the smoke pod's log): its findings, for
// verify to judge.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::cluster {

struct DoctorFinding {
  std::string id;      // container.visible-devices, ...
  std::string status;  // ok, warn, fail, skip
  std::string summary;
  std::string evidence;
};

// The findings of the report `json`; `source` names it in errors, which are one line as
// kube/json_walk.h words them. A document without findings is an error too: it is not a report.
absl::StatusOr<std::vector<DoctorFinding>> ReadDoctorReport(std::string_view json,
                                                            std::string_view source);

}  // namespace gpunode::cluster
