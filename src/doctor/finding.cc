#include "doctor/finding.h"

namespace gpunode::doctor {

absl::string_view StatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kSkip:
      return "skip";
  }
  return "fail";
}

Summary Summarize(const std::vector<Finding>& findings) {
  Summary summary;
  for (const Finding& finding : findings) {
    switch (finding.status) {
      case CheckStatus::kOk:
        ++summary.ok;
        break;
      case CheckStatus::kWarn:
        ++summary.warn;
        break;
      case CheckStatus::kFail:
        ++summary.fail;
        break;
      case CheckStatus::kSkip:
        ++summary.skip;
        break;
    }
  }
  return summary;
}

}  // namespace gpunode::doctor
