// Feeds arbitrary bytes to the reader of `cluster upgrade --maintenance-job FILE` (YAML or JSON),
// and builds the Job for a node from whatever it accepts.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cluster/maintenance_job.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<nlohmann::json> job = gpunode::cluster::ParseMaintenanceJob(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  if (job.ok()) {
    (void)gpunode::cluster::MaintenanceJobFor(*job, "gpu-a", "gpunode-system", "550.90.07");
  }
  return 0;
}
