// What NVML shows about a GPU that lost its devices to a fault, judged per fault class: the fault
// is gone, not yet, or never without a person (docs/DEVICE_PLUGIN.md, "Health and recovery").
#pragma once

#include <optional>
#include <set>
#include <string>

#include "health/xid.h"
#include "nvml/device.h"

namespace gpunode::health {

// What a GPU looked like when the plugin started, to compare against.
struct GpuBaseline {
  std::string uuid;
  // Active NVLinks at the start; empty when NVML does not report them.
  std::optional<size_t> active_nvlinks;
};

GpuBaseline BaselineOf(const nvml::Device& device, std::string uuid);

struct Evidence {
  enum Verdict { kGone, kNotYet, kNever };
  Verdict verdict = kNotYet;
  // kGone: what was seen, e.g. "the row remapper shows nothing pending and no failure";
  // otherwise what is missing or why it cannot come.
  std::string what;
};

// Judges every class in `faults` (all must be gone); `device` is empty when there is no handle.
Evidence JudgeRecovery(const std::optional<nvml::Device>& device, const GpuBaseline& baseline,
                       const std::set<FaultClass>& faults);

}  // namespace gpunode::health
