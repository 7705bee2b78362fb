// How `cluster verify` prints its report: a table per node and step, then each failure with
// its evidence and fix; or JSON.
#include <algorithm>

#include "cluster/verify.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {
namespace {

std::string_view ResultName(StepResult r) {
  switch (r) {
    case StepResult::kPass:
      return "pass";
    case StepResult::kFail:
      return "fail";
    case StepResult::kSkip:
      return "skip";
  }
  return "skip";
}

std::string Pad(std::string_view s, size_t width) {
  std::string out(s);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

// A table row without the padding after its last column.
void Row(std::string row, std::ostream& out) {
  row.erase(row.find_last_not_of(' ') + 1);
  out << row << "\n";
}

}  // namespace

std::string_view VerifyCheckName(VerifyCheck check) {
  switch (check) {
    case VerifyCheck::kReady:
      return "ready";
    case VerifyCheck::kLabels:
      return "labels";
    case VerifyCheck::kDevicePlugin:
      return "device-plugin";
    case VerifyCheck::kCapacity:
      return "capacity";
    case VerifyCheck::kSmokePod:
      return "smoke-pod";
    case VerifyCheck::kWorkload:
      return "workload";
  }
  return "ready";
}

void PrintVerifyTable(const VerifyReport& report, std::ostream& out) {
  size_t name_width = 4;
  for (const NodeVerdict& n : report.nodes) name_width = std::max(name_width, n.node.size());
  std::string header = Pad("NODE", name_width + 3) + Pad("RESULT", 9);
  std::vector<VerifyCheck> columns(std::begin(kVerifyChecks), std::end(kVerifyChecks));
  for (const NodeVerdict& n : report.nodes) {
    for (const VerifyStep& step : n.steps) {
      if (step.step == VerifyCheck::kWorkload &&
          std::find(columns.begin(), columns.end(), step.step) == columns.end()) {
        columns.push_back(step.step);
      }
    }
  }
  for (VerifyCheck check : columns) {
    std::string_view s = VerifyCheckName(check);
    std::string upper(s);
    std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
    header += Pad(upper, s.size() + 3);
  }
  Row(header, out);
  int passed = 0;
  for (const NodeVerdict& n : report.nodes) {
    passed += n.Passed() ? 1 : 0;
    std::string row = Pad(n.node, name_width + 3) + Pad(n.Passed() ? "pass" : "FAIL", 9);
    for (VerifyCheck check : columns) {
      std::string_view result = "-";
      for (const VerifyStep& step : n.steps) {
        if (step.step == check) result = ResultName(step.result);
      }
      row += Pad(result, VerifyCheckName(check).size() + 3);
    }
    Row(row, out);
  }
  bool any_failure = false;
  for (const NodeVerdict& n : report.nodes) {
    for (const VerifyStep& step : n.steps) {
      if (step.result != StepResult::kFail) continue;
      if (!any_failure) out << "\n";
      any_failure = true;
      out << "fail  " << VerifyCheckName(step.step) << "  node/" << n.node << "\n    "
          << step.evidence << "\n";
      if (!step.fix.empty()) out << "    fix: " << step.fix << "\n";
    }
  }
  out << "\n" << passed << " of " << report.nodes.size() << " node(s) passed";
  if (report.interrupted) out << " (interrupted: the remaining nodes were not verified)";
  out << "\n";
  if (report.dry_run) out << "dry run: the smoke pod was not run\n";
}

std::string VerifyJson(const VerifyReport& report) {
  nlohmann::json nodes = nlohmann::json::array();
  int passed = 0;
  for (const NodeVerdict& n : report.nodes) {
    passed += n.Passed() ? 1 : 0;
    nlohmann::json steps = nlohmann::json::array();
    for (const VerifyStep& s : n.steps) {
      steps.push_back({{"step", VerifyCheckName(s.step)},
                       {"result", ResultName(s.result)},
                       {"evidence", s.evidence},
                       {"fix", s.fix}});
    }
    nodes.push_back({{"name", n.node},
                     {"passed", n.Passed()},
                     {"steps", steps},
                     {"missing_gpus", n.missing_gpus},
                     {"missing_gpus_unnamed", n.missing_gpus_unnamed}});
  }
  nlohmann::json doc = {{"nodes", nodes},
                        {"interrupted", report.interrupted},
                        {"dry_run", report.dry_run},
                        {"summary",
                         {{"nodes", report.nodes.size()},
                          {"passed", passed},
                          {"failed", static_cast<int>(report.nodes.size()) - passed}}}};
  return doc.dump(2) + "\n";
}

}  // namespace gpunode::cluster
