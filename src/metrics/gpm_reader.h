// Profiling metrics through GPM: one stream of samples per GPU and per MIG GPU instance, each
// sample compared with the one before it, so every value covers the time since the previous
// sample (one sampling interval).
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nvml/device.h"
#include "nvml/gpm.h"

namespace gpunode::metrics {

class GpmReader {
 public:
  explicit GpmReader(const nvml::Library& library) : library_(library) {}

  // Whether GPU `index` has GPM; asked once per GPU. NotSupported where it does not.
  absl::StatusOr<bool> Supported(unsigned index, const nvml::Device& gpu);

  // Takes this interval's sample of GPU `index` (of its GPU instance `gpu_instance_id` when set)
  // and returns the metrics since the stream's previous sample: nullopt for the first sample of a
  // stream. The GPU must be Supported.
  absl::StatusOr<std::optional<nvml::GpmValues>> Read(unsigned index, const nvml::Device& gpu,
                                                      std::optional<unsigned> gpu_instance_id);

  // Forgets the streams of GPU `index` (it was lost, or its MIG layout changed).
  void Forget(unsigned index);

 private:
  struct Stream {
    std::optional<nvml::GpmSample> previous;
    std::optional<nvml::GpmSample> current;
  };
  const nvml::Library& library_;
  std::vector<std::optional<bool>> supported_;  // by GPU index
  // By (GPU index, GPU instance id or kWholeGpu).
  std::map<std::pair<unsigned, unsigned>, Stream> streams_;
};

}  // namespace gpunode::metrics
