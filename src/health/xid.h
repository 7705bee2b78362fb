// Which NVIDIA XIDs make a GPU unhealthy, and what each one means (for the log line an operator
// reads when a device changes health).
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace gpunode::health {

// XIDs caused by the application running on the GPU, not by the GPU (gpu/xid_catalog.h): NVIDIA's
// plugin ignores them and so does gpunode (13, 31, 43, 45, 68, 109).
const std::set<uint64_t>& ApplicationXids();

// What a GPU must show before a device it lost to an XID is offered again (docs/DEVICE_PLUGIN.md,
// "Health and recovery", has the table).
enum class FaultClass {
  kMemory,    // 48, 63, 64, 92, 94, 95: the row remapper shows nothing pending and no failure
  kGpuLost,   // 79 and GPU_IS_LOST: the GPU is back on the bus with the same UUID
  kNvLink,    // 74: every NVLink that was active at the start is active again
  kResponds,  // any other XID: NVML answers queries of the GPU
};

FaultClass ClassifyXid(uint64_t xid);

// For the log line: NVIDIA's text for the XID ("GPU has fallen off the bus"), with
// "; usually the application" for application XIDs and "not in NVIDIA's XID catalog" for an XID
// newer than the catalog.
std::string XidMeaning(uint64_t xid);

struct XidPolicy {
  bool enabled = true;         // false: no health checks at all
  std::set<uint64_t> ignored;  // XIDs that never mark a device unhealthy

  bool Critical(uint64_t xid) const { return enabled && !ignored.contains(xid); }
};

// From NVIDIA's variables: DP_DISABLE_HEALTHCHECKS ("all" or "xids" turns health checks off; a
// comma-separated list of XIDs is ignored in addition to the application XIDs) and
// DP_ENABLE_HEALTHCHECKS (XIDs that count even if ignored; "all" counts every XID). Either may be
// null. An entry that is neither a keyword nor a number is an error naming the variable.
absl::StatusOr<XidPolicy> XidPolicyFromEnvironment(const char* disable, const char* enable);

}  // namespace gpunode::health
