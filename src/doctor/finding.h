// One result of `gpunode doctor`: which layer and check, how it went, what was seen and what to do.
// The ids and the JSON keys are a contract (docs/DOCTOR.md).
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace gpunode::doctor {

enum class CheckStatus { kOk, kWarn, kFail, kSkip };

absl::string_view StatusName(CheckStatus status);

struct Finding {
  std::string layer;  // pci, driver, runtime, plugin, dra, kubelet, container, topology
  std::string id;     // e.g. "driver.uvm"
  CheckStatus status = CheckStatus::kOk;
  std::string summary;
  std::string evidence;  // the file, value or answer the check saw
  std::string fix;       // the command or change to make; empty when there is nothing to do
};

struct Summary {
  int ok = 0;
  int warn = 0;
  int fail = 0;
  int skip = 0;
};

Summary Summarize(const std::vector<Finding>& findings);

}  // namespace gpunode::doctor
