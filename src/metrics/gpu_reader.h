// Reads every GPU and MIG device from NVML into GpuReadings, remembering each GPU's identity so a
// GPU that falls off the bus keeps its labels (and its health series) in later samples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "metrics/gpm_reader.h"
#include "metrics/node_reading.h"
#include "nvml/library.h"

namespace gpunode::metrics {

class GpuReader {
 public:
  explicit GpuReader(const nvml::Library& library) : library_(library), gpm_(library) {}

  // One reading per GPU index. Values the GPU does not report stay empty; other NVML failures
  // are counted in *errors. A GPU that answers GPU_IS_LOST (or cannot be reached) is `lost`.
  // The profiling (GPM) values cover the time since the previous Read or PrimeProfiling, and
  // are left out the first time.
  std::vector<GpuReading> Read(uint64_t* errors);

  // Takes the opening GPM sample of every GPU and GPU instance that has GPM, so that the next
  // Read already reports profiling values; false when there was none to take. Failures are left
  // to Read to report.
  bool PrimeProfiling();

 private:
  struct Identity {
    std::string uuid, name, pci_bus_id;
  };
  // What is asked once per GPU or carried from one Read to the next.
  struct Carried {
    std::optional<std::vector<unsigned>> nvlinks;  // active links, asked once
    // NVML_GPU_VIRTUALIZATION_MODE_*, asked until the driver answers
    std::optional<nvmlGpuVirtualizationMode_t> virtualization_mode;
    uint64_t utilization_seen_us = 0;  // newest process-utilization sample taken
    bool lost = false;                 // in the last sample: logged once per fall
  };

  const nvml::Library& library_;
  GpmReader gpm_;
  std::vector<Identity> known_;   // by GPU index
  std::vector<Carried> carried_;  // by GPU index
};

}  // namespace gpunode::metrics
