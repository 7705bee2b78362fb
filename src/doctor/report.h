// How findings are shown: a table for people (colour only on a terminal) and the JSON contract
// of `gpunode doctor -o json` (findings[] and summary).
#pragma once

#include <string>
#include <vector>

#include "doctor/finding.h"
#include "nlohmann/json.hpp"

namespace gpunode::doctor {

std::string RenderTable(const std::vector<Finding>& findings, bool colour);
nlohmann::json RenderJson(const std::vector<Finding>& findings);

}  // namespace gpunode::doctor
