// What the simulator answers for a GPU's activity beyond nvmlDeviceGetUtilizationRates: the GPM
// profiling metrics, the share of each process, and the data moved over NVLink. All of it follows
// the GPU's utilization as the profile and its timeline set it, so a workload that ramps up in
// the timeline shows in every one of these.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "node_model.h"

namespace gpunode::sim {

// GPM is served on Hopper (9) and Blackwell (10) and later; older GPUs and an unknown
// architecture do not have it, as with the real driver.
bool gpm_supported(std::optional<unsigned> architecture);

// What one GPM sample holds: the instant, the device, and its utilization then.
struct ActivitySnapshot {
  SimTime at{0};
  unsigned gpu = 0;
  std::optional<unsigned> gpu_instance_id;  // set for nvmlGpmMigSampleGet
  double utilization_gpu = 0;               // percent
  double utilization_memory = 0;            // percent
  unsigned nvlinks = 0;                     // active links of the GPU
};

// The value of GPM metric `metric_id` between two snapshots of one device, from the mean
// utilization over the span: percentages for the *_UTIL metrics, MiB/s for the rates. nullopt
// for a metric the simulator does not serve, and for NVLink on a GPU without links.
std::optional<double> gpm_metric(unsigned metric_id, const ActivitySnapshot& earlier,
                                 const ActivitySnapshot& later);

// NVLink data rate of one link in one direction at full utilization, in MiB/s (GPM reports
// MiB/s; the field values count KiB).
constexpr double kNvlinkMibPerSecAtFullLoad = 20480;

// SM and memory utilization of each process: the GPU's utilization shared equally among its
// compute processes.
struct ProcessShare {
  unsigned pid = 0;
  unsigned sm_pct = 0;
  unsigned memory_pct = 0;
};
std::vector<ProcessShare> process_shares(const std::vector<ProcessInfo>& processes,
                                         unsigned utilization_gpu, unsigned utilization_memory);

// The integral of a GPU's utilization over simulated time, kept per GPU to make the NVLink
// throughput fields monotonic counters. advance() must see `now` in order; an earlier `now`
// (a new configuration restarted the clock) starts over from zero.
class UtilizationIntegral {
 public:
  // Adds the span since the last call (trapezoid between the two utilizations) and returns the
  // total in percent-seconds.
  double advance(SimTime now, unsigned utilization_pct);

 private:
  SimTime last_{0};
  double last_pct_ = 0;
  double total_ = 0;
  bool started_ = false;
};

// KiB moved over one link in one direction for `percent_seconds` of utilization.
uint64_t nvlink_kib(double percent_seconds);

}  // namespace gpunode::sim
