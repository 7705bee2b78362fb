// Feeds arbitrary bytes to the reader of Prometheus's /api/v1/query answers, which come from
// whatever --prometheus points at.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cluster/prometheus_idle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)gpunode::cluster::ParseUtilizationAnswer(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
