// Carries out the plans of mig_plan on the node through NVML, GPU by GPU, and puts every GPU it
// changed back as it was when a step fails half-way.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "mig/gpu_mig_state.h"
#include "mig/mig_plan.h"
#include "nvml/library.h"

namespace gpunode::mig {

struct ApplyOptions {
  bool dry_run = false;
  bool force = false;  // change GPUs that processes use
};

struct ApplyResult {
  std::vector<std::string> lines;  // what was done (or would be), in order
  // GPUs whose mode change waits for a reset; each line says what to do.
  std::vector<std::string> pending;
  bool changed = false;
};

// Plans every GPU for config `config_name` and, unless dry_run, applies the plans. Nothing is
// touched when any GPU's plan fails or when a GPU to change runs processes (unless force); a
// failure half-way rolls back the GPUs changed so far and returns the failure (with what the
// rollback did).
absl::StatusOr<ApplyResult> ApplyConfig(const nvml::Library& library, const MigConfigFile& file,
                                        const std::string& config_name,
                                        const ApplyOptions& options);

// The differences between the node and config `config_name` (empty: the node has it).
absl::StatusOr<std::vector<std::string>> AssertConfig(const nvml::Library& library,
                                                      const MigConfigFile& file,
                                                      const std::string& config_name);

// One line per planned step of `plan` ("GPU 0 (...): create 3g.40gb at 4:4").
std::vector<std::string> DescribePlan(const GpuPlan& plan, const GpuMigState& state);

}  // namespace gpunode::mig
