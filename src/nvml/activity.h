// Who keeps a GPU busy: utilization per process, and data moved over NVLink.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "nvml/device.h"

namespace gpunode::nvml {

class Library;

struct ProcessUtilization {
  unsigned pid = 0;
  uint64_t timestamp_us = 0;  // CPU time of the driver's sample
  unsigned sm_pct = 0;
  unsigned memory_pct = 0;
  unsigned encoder_pct = 0;
  unsigned decoder_pct = 0;
  // JPEG and optical-flow engines: only nvmlDeviceGetProcessesUtilizationInfo reports them.
  std::optional<unsigned> jpeg_pct;
  std::optional<unsigned> optical_flow_pct;
};

// The driver's per-process samples taken after `since_timestamp_us` (0: every sample it still
// holds), from nvmlDeviceGetProcessesUtilizationInfo where the driver has it (550 and later), else
// nvmlDeviceGetProcessUtilization. No sample in that window is an empty list, not an error; a
// process that ran nothing then has no sample.
absl::StatusOr<std::vector<ProcessUtilization>> ProcessUtilizations(const Library& library,
                                                                    const Device& device,
                                                                    uint64_t since_timestamp_us);

// NVLink data (payload, no protocol overhead) sent and received over `links` since the driver
// loaded, in KiB, summed over the links (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_{TX,RX}).
absl::StatusOr<uint64_t> NvLinkDataKib(const Library& library, const Device& gpu,
                                       const std::vector<unsigned>& links);

}  // namespace gpunode::nvml
