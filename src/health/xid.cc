#include "health/xid.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gpu/xid_catalog.h"

namespace gpunode::health {
namespace {

struct XidList {
  bool all = false;
  std::set<uint64_t> xids;
};

absl::StatusOr<XidList> ParseList(const char* name, const char* value) {
  XidList list;
  if (value == nullptr) return list;
  for (absl::string_view part : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
    std::string item = absl::AsciiStrToLower(absl::StripAsciiWhitespace(part));
    uint64_t xid = 0;
    if (item == "all" || item == "xids") {
      list.all = true;
    } else if (absl::SimpleAtoi(item, &xid)) {
      list.xids.insert(xid);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("environment variable ", name, ": \"", item,
                       "\" is not an XID; use all, xids or a comma-separated list of XID numbers"));
    }
  }
  return list;
}

}  // namespace

const std::set<uint64_t>& ApplicationXids() {
  static const auto* xids = [] {
    auto* out = new std::set<uint64_t>;
    for (uint64_t xid = 0; gpu::FindXid(xid) != nullptr; ++xid) {
      if (gpu::FindXid(xid)->cause == gpu::XidCause::kApplication) out->insert(xid);
    }
    return out;
  }();
  return *xids;
}

FaultClass ClassifyXid(uint64_t xid) {
  const gpu::XidEntry* entry = gpu::FindXid(xid);
  switch (entry != nullptr ? entry->recovery : gpu::XidRecovery::kResponds) {
    case gpu::XidRecovery::kMemory:
      return FaultClass::kMemory;
    case gpu::XidRecovery::kGpuLost:
      return FaultClass::kGpuLost;
    case gpu::XidRecovery::kNvLink:
      return FaultClass::kNvLink;
    case gpu::XidRecovery::kResponds:
      break;
  }
  return FaultClass::kResponds;
}

std::string XidMeaning(uint64_t xid) {
  const gpu::XidEntry* entry = gpu::FindXid(xid);
  if (entry == nullptr || xid == 0) return "not in NVIDIA's XID catalog";
  if (entry->cause == gpu::XidCause::kApplication)
    return std::string(entry->description) + "; usually the application";
  return std::string(entry->description);
}

absl::StatusOr<XidPolicy> XidPolicyFromEnvironment(const char* disable, const char* enable) {
  absl::StatusOr<XidList> disabled = ParseList("DP_DISABLE_HEALTHCHECKS", disable);
  if (!disabled.ok()) return disabled.status();
  absl::StatusOr<XidList> enabled = ParseList("DP_ENABLE_HEALTHCHECKS", enable);
  if (!enabled.ok()) return enabled.status();
  XidPolicy policy;
  // As NVIDIA's plugin: disabling all wins over any enable list.
  if (disabled->all) {
    policy.enabled = false;
    return policy;
  }
  policy.ignored = ApplicationXids();
  policy.ignored.insert(disabled->xids.begin(), disabled->xids.end());
  if (enabled->all) policy.ignored.clear();
  for (uint64_t xid : enabled->xids) policy.ignored.erase(xid);
  return policy;
}

}  // namespace gpunode::health
