// Feeds arbitrary bytes to the webhook's mutate, validate and defaults handlers, as the API
// server (or anyone who reaches the port) would.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cluster/gpu_job_defaults.h"
#include "cluster/webhook.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpunode::cluster;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  (void)Mutate(body);
  ClusterLimits limits;
  limits.largest["nvidia.com/gpu"] = 8;
  limits.gpu_taint_values = {"present"};
  (void)Validate(body, limits);
  JobDefaults defaults{.active_deadline_seconds = 86400, .ttl_seconds = 3600};
  (void)ApplyJobDefaults(body, defaults, [](std::string_view ns) { return ns.size() % 2 == 0; });
  return 0;
}
