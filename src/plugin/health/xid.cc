#include "plugin/health/xid.h"

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpunode::plugin {
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
  static const auto* xids = new std::set<uint64_t>{13, 31, 43, 45, 68, 109};
  return *xids;
}

FaultClass ClassifyXid(uint64_t xid) {
  switch (xid) {
    case 48:
    case 63:
    case 64:
    case 92:
    case 94:
    case 95:
      return FaultClass::kMemory;
    case 79:
      return FaultClass::kGpuLost;
    case 74:
      return FaultClass::kNvLink;
    default:
      return FaultClass::kResponds;
  }
}

std::string XidMeaning(uint64_t xid) {
  // From NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors).
  static const auto* meanings = new std::map<uint64_t, const char*>{
      {13, "graphics engine exception (usually the application)"},
      {31, "GPU memory page fault (usually the application)"},
      {32, "invalid or corrupted push buffer stream"},
      {38, "driver firmware error"},
      {43, "GPU stopped processing (usually the application)"},
      {45, "preemptive cleanup after previous errors"},
      {48, "double-bit ECC error"},
      {61, "internal micro-controller breakpoint/warning"},
      {62, "internal micro-controller halt"},
      {63, "ECC page retirement or row remapping recorded"},
      {64, "ECC page retirement or row remapping failed"},
      {68, "video processor exception (usually the application)"},
      {69, "graphics engine class error"},
      {74, "NVLink error"},
      {79, "GPU has fallen off the bus"},
      {92, "high single-bit ECC error rate"},
      {94, "contained ECC error"},
      {95, "uncontained ECC error"},
      {109, "context switch timeout (usually the application)"},
      {119, "GSP RPC timeout"},
      {120, "GSP error"},
  };
  auto it = meanings->find(xid);
  return it != meanings->end() ? it->second : "see NVIDIA's XID catalog";
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

}  // namespace gpunode::plugin
