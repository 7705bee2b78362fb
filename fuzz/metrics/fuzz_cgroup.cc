// Fuzzes the /proc/PID/cgroup parser: any bytes give an identity, and whatever it finds is a
// well-formed pod UID and container id (never a slice of garbage).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "metrics/cgroup.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpunode::metrics::CgroupIdentity id = gpunode::metrics::ParseProcCgroup(
      std::string_view(reinterpret_cast<const char*>(data), size));
  for (char c : id.pod_uid) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')) std::abort();
  }
  if (!id.pod_uid.empty() && (id.pod_uid.size() < 32 || id.pod_uid.size() > 36)) std::abort();
  for (char c : id.container_id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) std::abort();
  }
  return 0;
}
