#include "cluster/report.h"

#include <algorithm>
#include <vector>

#include "core/text.h"
#include "kube/gpu_resources.h"
#include "kube/quantity.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {
namespace {

using ordered_json = nlohmann::ordered_json;
using core::StrCat;

// Whole amounts as JSON integers; fractions (shared or fractional resources) as numbers.
ordered_json Number(int64_t milli) {
  if (kube::IsWholeMilli(milli)) return milli / 1000;
  return static_cast<double>(milli) / 1000.0;
}

std::string_view ReadyText(kube::ConditionStatus s) {
  switch (s) {
    case kube::ConditionStatus::kTrue:
      return "True";
    case kube::ConditionStatus::kFalse:
      return "False";
    case kube::ConditionStatus::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

// Prints rows with columns padded to the widest cell, like kubectl.
void PrintTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] - row[i].size() + 3, ' ');
    }
    out << line << "\n";
  }
}

}  // namespace

void PrintAuditTable(const AuditReport& report, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {
      {"NODE", "READY", "GPU.STATE", "GPU.COUNT", "CAPACITY", "ALLOCATABLE", "REQUESTED", "FREE",
       "GPU PODS", "OTHER NVIDIA RESOURCES (cap/alloc/req)"}};
  for (const NodeSummary& n : report.nodes) {
    ResourceUsage gpu = n.Gpu();
    std::string other;
    for (const ResourceUsage& r : n.resources) {
      if (r.resource == kube::kGpuResource) continue;
      core::StrAppend(&other, other.empty() ? "" : " ", r.resource, "=",
                      kube::FormatMilli(r.capacity), "/", kube::FormatMilli(r.allocatable), "/",
                      kube::FormatMilli(r.requested));
    }
    std::string ready(ReadyText(n.ready));
    if (n.unschedulable) ready += ",Cordoned";
    rows.push_back({n.name, ready, n.gpu_state ? *n.gpu_state : "-",
                    n.gpu_count ? StrCat(*n.gpu_count) : "-", kube::FormatMilli(gpu.capacity),
                    kube::FormatMilli(gpu.allocatable), kube::FormatMilli(gpu.requested),
                    kube::FormatMilli(gpu.Free()), StrCat(n.gpu_pods),
                    other.empty() ? "-" : other});
  }
  if (report.nodes.empty()) {
    out << "no GPU nodes among " << report.node_count << " node(s)\n";
  } else {
    PrintTable(rows, out);
  }
  int errors = report.Count(Severity::kError);
  int warnings = report.Count(Severity::kWarning);
  out << "\n"
      << report.findings.size() << " finding(s): " << errors << " error(s), " << warnings
      << " warning(s)\n";
  for (const Finding& f : report.findings) {
    out << SeverityName(f.severity) << "  " << f.id << "  " << f.object << "\n";
    out << "    " << f.message << "\n";
    out << "    fix: " << f.fix << "\n";
  }
}

std::string AuditJson(const AuditReport& report) {
  ordered_json nodes = ordered_json::array();
  for (const NodeSummary& n : report.nodes) {
    ResourceUsage gpu = n.Gpu();
    ordered_json resources = ordered_json::object();
    for (const ResourceUsage& r : n.resources) {
      resources[r.resource] = {{"capacity", Number(r.capacity)},
                               {"allocatable", Number(r.allocatable)},
                               {"requested", Number(r.requested)},
                               {"free", Number(r.Free())}};
    }
    nodes.push_back(
        {{"name", n.name},
         {"ready", n.ready == kube::ConditionStatus::kTrue},
         {"unschedulable", n.unschedulable},
         {"gpu_state", n.gpu_state ? ordered_json(*n.gpu_state) : ordered_json(nullptr)},
         {"gpu_count", n.gpu_count ? ordered_json(*n.gpu_count) : ordered_json(nullptr)},
         {"missing_gpus", n.missing_gpus},
         {"missing_gpus_unnamed", n.missing_gpus_unnamed},
         {"capacity", Number(gpu.capacity)},
         {"allocatable", Number(gpu.allocatable)},
         {"requested", Number(gpu.requested)},
         {"free", Number(gpu.Free())},
         {"gpu_pods", n.gpu_pods},
         {"resources", resources}});
  }
  ordered_json findings = ordered_json::array();
  for (const Finding& f : report.findings) {
    findings.push_back({{"id", f.id},
                        {"severity", SeverityName(f.severity)},
                        {"object", f.object},
                        {"message", f.message},
                        {"fix", f.fix}});
  }
  ordered_json out = {{"nodes", nodes},
                      {"findings", findings},
                      {"summary",
                       {{"nodes", report.node_count},
                        {"gpu_nodes", report.nodes.size()},
                        {"pods", report.pod_count},
                        {"active_gpu_pods", report.active_gpu_pods},
                        {"errors", report.Count(Severity::kError)},
                        {"warnings", report.Count(Severity::kWarning)}}}};
  return out.dump(2) + "\n";
}

void PrintPendingTable(const PendingReport& report, std::ostream& out) {
  std::string wants;
  for (const auto& [name, milli] : report.requests) {
    core::StrAppend(&wants, wants.empty() ? "" : ", ", kube::FormatMilli(milli), " ", name);
  }
  out << "pod " << report.ns << "/" << report.name << " (" << report.phase
      << "), requests: " << (wants.empty() ? "no NVIDIA resources" : wants) << "\n";
  for (const PodProblem& p : report.problems) out << "  invalid: " << p.message << "\n";
  if (report.verdict.code != "not-pending") {
    std::vector<std::vector<std::string>> rows = {{"NODE", "FITS", "REASONS"}};
    for (const NodeFit& n : report.nodes) {
      std::string reasons;
      for (const NodeReason& r : n.reasons) {
        core::StrAppend(&reasons, reasons.empty() ? "" : "; ", r.message);
      }
      rows.push_back({n.node, n.reasons.empty() ? "yes" : "no", reasons.empty() ? "-" : reasons});
    }
    out << "\n";
    PrintTable(rows, out);
    out << "\nscheduler: " << report.scheduler_message << "\n";
    if (!report.recorded_message.empty()) {
      out << "last scheduling attempt: " << report.recorded_message << "\n";
    }
    if (report.pod_affinity_ignored) {
      out << "note: the pod has required inter-pod (anti-)affinity, which gpunode does not "
             "evaluate\n";
    }
  }
  out << "verdict: " << report.verdict.code << ": " << report.verdict.message << "\n";
}

std::string PendingJson(const PendingReport& report) {
  ordered_json requests = ordered_json::object();
  for (const auto& [name, milli] : report.requests) requests[name] = Number(milli);
  ordered_json problems = ordered_json::array();
  for (const PodProblem& p : report.problems) {
    problems.push_back({{"code", p.code}, {"message", p.message}});
  }
  ordered_json nodes = ordered_json::array();
  for (const NodeFit& n : report.nodes) {
    ordered_json reasons = ordered_json::array();
    for (const NodeReason& r : n.reasons) {
      reasons.push_back({{"code", r.code}, {"message", r.message}, {"temporary", r.temporary}});
    }
    nodes.push_back({{"name", n.node}, {"fits", n.reasons.empty()}, {"reasons", reasons}});
  }
  ordered_json out = {
      {"pod",
       {{"namespace", report.ns},
        {"name", report.name},
        {"phase", report.phase},
        {"node",
         report.node_name.empty() ? ordered_json(nullptr) : ordered_json(report.node_name)}}},
      {"requests", requests},
      {"problems", problems},
      {"nodes", nodes},
      {"scheduler_message", report.scheduler_message},
      {"recorded_message", report.recorded_message},
      {"verdict", {{"code", report.verdict.code}, {"message", report.verdict.message}}}};
  return out.dump(2) + "\n";
}

}  // namespace gpunode::cluster
