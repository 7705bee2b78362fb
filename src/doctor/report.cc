#include "doctor/report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gpunode::doctor {
namespace {

const char* Colour(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk:
      return "\033[32m";
    case CheckStatus::kWarn:
      return "\033[33m";
    case CheckStatus::kFail:
      return "\033[31m";
    case CheckStatus::kSkip:
      return "\033[2m";
  }
  return "";
}

std::string Pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

}  // namespace

std::string RenderTable(const std::vector<Finding>& findings, bool colour) {
  size_t id_width = 2;
  for (const Finding& finding : findings) id_width = std::max(id_width, finding.id.size());
  std::string out = absl::StrCat(Pad("STATUS", 6), "  ", Pad("CHECK", id_width), "  SUMMARY\n");
  for (const Finding& finding : findings) {
    std::string status = Pad(std::string(StatusName(finding.status)), 6);
    if (colour) status = absl::StrCat(Colour(finding.status), status, "\033[0m");
    absl::StrAppend(&out, status, "  ", Pad(finding.id, id_width), "  ", finding.summary, "\n");
    std::string indent(8 + id_width, ' ');
    if ((finding.status == CheckStatus::kWarn || finding.status == CheckStatus::kFail) &&
        !finding.evidence.empty()) {
      absl::StrAppend(&out, indent, "saw: ", finding.evidence, "\n");
    }
    if ((finding.status == CheckStatus::kWarn || finding.status == CheckStatus::kFail) &&
        !finding.fix.empty()) {
      absl::StrAppend(&out, indent, "fix: ", finding.fix, "\n");
    }
  }
  Summary summary = Summarize(findings);
  absl::StrAppend(&out, "\n", summary.ok, " ok, ", summary.warn, " warn, ", summary.fail, " fail, ",
                  summary.skip, " skip\n");
  return out;
}

nlohmann::json RenderJson(const std::vector<Finding>& findings) {
  nlohmann::json list = nlohmann::json::array();
  for (const Finding& finding : findings) {
    list.push_back({{"layer", finding.layer},
                    {"id", finding.id},
                    {"status", StatusName(finding.status)},
                    {"summary", finding.summary},
                    {"evidence", finding.evidence},
                    {"fix", finding.fix}});
  }
  Summary summary = Summarize(findings);
  return {{"findings", std::move(list)},
          {"summary",
           {{"ok", summary.ok},
            {"warn", summary.warn},
            {"fail", summary.fail},
            {"skip", summary.skip}}}};
}

}  // namespace gpunode::doctor
