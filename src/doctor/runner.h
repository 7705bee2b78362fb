// The checks as a dependency graph: a check whose prerequisite failed (or was itself skipped) is
// not run but reported as skip "blocked by <id>", so one broken layer gives one failure.
#pragma once

#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "doctor/context.h"
#include "doctor/finding.h"

namespace gpunode::doctor {

// What a check that reads the GPUs is handed: NVML, opened, and the node's snapshot, read.
struct Gpus {
  const nvml::Library& nvml;
  const gpu::NodeSnapshot& node;
};

// Fills status, summary, evidence and fix; the runner sets layer and id.
using HostCheck = std::function<Finding(const Context&)>;
using GpuCheck = std::function<Finding(const Context&, const Gpus&)>;

struct Check {
  std::string layer;
  std::string id;
  std::vector<std::string> needs;  // ids of the checks this one builds on
  // A GpuCheck runs only when NVML opened and the GPUs were read; otherwise the runner reports it
  // as skipped with the reason, so no check dereferences what is not there.
  std::variant<HostCheck, GpuCheck> run;
};

// Runs `checks` and returns one finding per check, in the order given. Prerequisites may be
// listed later (pci.gpu-count-match needs driver.nvml); they run first. An unknown or circular
// prerequisite is a programming error reported as a fail of the check that names it.
std::vector<Finding> RunChecks(const std::vector<Check>& checks, const Context& context);

// Finding builders that keep the check files short.
Finding Ok(std::string summary, std::string evidence = "");
Finding Warn(std::string summary, std::string evidence, std::string fix);
Finding Fail(std::string summary, std::string evidence, std::string fix);
Finding Skip(std::string summary, std::string evidence = "");

}  // namespace gpunode::doctor
