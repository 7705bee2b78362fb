#include "doctor/runner.h"

#include <map>
#include <optional>

#include "absl/strings/str_cat.h"

namespace gpunode::doctor {
namespace {

Finding Make(CheckStatus status, std::string summary, std::string evidence, std::string fix) {
  Finding finding;
  finding.status = status;
  finding.summary = std::move(summary);
  finding.evidence = std::move(evidence);
  finding.fix = std::move(fix);
  return finding;
}

class Graph {
 public:
  Graph(const std::vector<Check>& checks, const Context& context) : context_(context) {
    for (const Check& check : checks) by_id_[check.id] = &check;
  }

  const Finding& Evaluate(const Check& check) {
    if (auto done = results_.find(check.id); done != results_.end()) return done->second;
    if (!in_progress_.insert({check.id, true}).second) {
      return Store(check, Fail("circular prerequisites", check.id, ""));
    }
    for (const std::string& need : check.needs) {
      auto it = by_id_.find(need);
      if (it == by_id_.end()) {
        return Store(check, Fail(absl::StrCat("unknown prerequisite ", need), check.id, ""));
      }
      const Finding& prerequisite = Evaluate(*it->second);
      if (prerequisite.status == CheckStatus::kFail || prerequisite.status == CheckStatus::kSkip) {
        return Store(check, Skip(absl::StrCat("blocked by ", need),
                                 absl::StrCat(need, ": ", prerequisite.summary)));
      }
    }
    return Store(check, Run(check));
  }

 private:
  Finding Run(const Check& check) {
    if (const HostCheck* run = std::get_if<HostCheck>(&check.run)) return (*run)(context_);
    if (context_.nvml() == nullptr) {
      return Skip("needs NVML, which did not open", std::string(context_.nvml_status().message()));
    }
    const absl::StatusOr<gpu::NodeSnapshot>& node = context_.Node();
    if (!node.ok())
      return Skip("needs the GPUs, which NVML cannot read", std::string(node.status().message()));
    return std::get<GpuCheck>(check.run)(context_, Gpus{*context_.nvml(), *node});
  }

  const Finding& Store(const Check& check, Finding finding) {
    finding.layer = check.layer;
    finding.id = check.id;
    return results_[check.id] = std::move(finding);
  }

  const Context& context_;
  std::map<std::string, const Check*> by_id_;
  std::map<std::string, bool> in_progress_;
  std::map<std::string, Finding> results_;
};

}  // namespace

std::vector<Finding> RunChecks(const std::vector<Check>& checks, const Context& context) {
  Graph graph(checks, context);
  std::vector<Finding> findings;
  findings.reserve(checks.size());
  for (const Check& check : checks) findings.push_back(graph.Evaluate(check));
  return findings;
}

Finding Ok(std::string summary, std::string evidence) {
  return Make(CheckStatus::kOk, std::move(summary), std::move(evidence), "");
}

Finding Warn(std::string summary, std::string evidence, std::string fix) {
  return Make(CheckStatus::kWarn, std::move(summary), std::move(evidence), std::move(fix));
}

Finding Fail(std::string summary, std::string evidence, std::string fix) {
  return Make(CheckStatus::kFail, std::move(summary), std::move(evidence), std::move(fix));
}

Finding Skip(std::string summary, std::string evidence) {
  return Make(CheckStatus::kSkip, std::move(summary), std::move(evidence), "");
}

}  // namespace gpunode::doctor
