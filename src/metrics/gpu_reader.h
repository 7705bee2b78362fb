// Reads every GPU and MIG device from NVML into GpuReadings, remembering each GPU's identity so a
// GPU that falls off the bus keeps its labels (and its health series) in later samples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "metrics/node_reading.h"
#include "nvml/library.h"

namespace gpunode::metrics {

class GpuReader {
 public:
  explicit GpuReader(const nvml::Library& library) : library_(library) {}

  // One reading per GPU index. Values the GPU does not report stay empty; other NVML failures
  // are counted in *errors. A GPU that answers GPU_IS_LOST (or cannot be reached) is `lost`.
  std::vector<GpuReading> Read(uint64_t* errors);

 private:
  struct Identity {
    std::string uuid, name, pci_bus_id;
  };

  const nvml::Library& library_;
  std::vector<Identity> known_;  // by GPU index
};

}  // namespace gpunode::metrics
