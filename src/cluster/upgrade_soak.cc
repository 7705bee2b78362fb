#include "cluster/upgrade_soak.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "cluster/prometheus_query.h"
#include "cluster/verify.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "kube/event_reader.h"

namespace gpunode::cluster {
namespace {

using core::StrCat;

constexpr absl::Duration kPrometheusTimeout = absl::Seconds(30);

// The XID an NVRM message names: "NVRM: Xid (PCI:0000:3b:00): 79, pid=..." gives 79; -1 when
// the text names none.
int XidIn(std::string_view text) {
  size_t at = text.find("Xid");
  if (at == std::string_view::npos) return -1;
  size_t colon = text.find("):", at);
  if (colon == std::string_view::npos) return -1;
  size_t i = colon + 2;
  while (i < text.size() && text[i] == ' ') ++i;
  int xid = 0;
  size_t digits = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && digits < 4) {
    xid = xid * 10 + (text[i++] - '0');
    ++digits;
  }
  return digits > 0 ? xid : -1;
}

bool Ignored(const UpgradeOptions& options, int xid) {
  return xid >= 0 && std::find(options.ignore_xids.begin(), options.ignore_xids.end(), xid) !=
                         options.ignore_xids.end();
}

bool MentionsXid(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return lower.find("xid") != std::string::npos;
}

// When the event last happened: series and lastTimestamp (core/v1), eventTime (events.k8s.io),
// else when it was created.
absl::Time EventTime(const kube::EventFields& event) {
  for (std::string_view text :
       {event.series_last, event.last, event.event_time, event.first, event.created}) {
    absl::Time t;
    std::string error;
    if (!text.empty() && absl::ParseTime(absl::RFC3339_full, std::string(text), &t, &error)) {
      return t;
    }
  }
  return absl::InfinitePast();
}

absl::Status XidsFromPrometheus(const FleetPool& pool, absl::Time since,
                                const UpgradeOptions& options, core::Env& env,
                                std::vector<Regression>& found) {
  absl::Duration window = std::max(env.Now() - since, absl::Seconds(1));
  ASSIGN_OR_RETURN(std::vector<PromSample> samples,
                   QueryPrometheus(options.prometheus, XidQuery(window), kPrometheusTimeout));
  std::map<std::string, std::vector<std::string>> by_node;
  for (const PromSample& s : samples) {
    if (s.value <= 0) continue;
    auto host = s.labels.find("Hostname");
    if (host == s.labels.end()) continue;
    auto xid = s.labels.find("xid");
    int number = -1;
    if (xid != s.labels.end() && !absl::SimpleAtoi(xid->second, &number)) number = -1;
    if (Ignored(options, number)) continue;
    by_node[host->second].push_back(StrCat("XID ",
                                           xid == s.labels.end() ? std::string("?") : xid->second,
                                           " x", static_cast<long long>(s.value + 0.5)));
  }
  for (const FleetNode* node : pool.nodes) {
    auto it = by_node.find(node->name);
    if (it == by_node.end()) continue;
    found.push_back({node->name, StrCat("XID errors during the soak (gpunode_xid_errors_total): ",
                                        absl::StrJoin(it->second, ", "))});
  }
  return absl::OkStatus();
}

absl::Status XidsFromEvents(kube::Client& client, const FleetPool& pool, absl::Time since,
                            const UpgradeOptions& options, std::vector<Regression>& found) {
  for (const FleetNode* node : pool.nodes) {
    std::string selector = StrCat("involvedObject.kind=Node,involvedObject.name=", node->name);
    std::vector<std::string> seen;
    kube::ListOptions list;
    list.field_selector = selector;
    RETURN_IF_ERROR(
        client.List("/api/v1/events", list,
                    [&](simdjson::padded_string_view body,
                        std::string_view source) -> absl::StatusOr<std::string> {
                      std::string continue_token;
                      RETURN_IF_ERROR(kube::ReadEventPage(
                          std::string_view(body.data(), body.size()), source,
                          [&](const kube::EventFields& event) {
                            if (!MentionsXid(event.reason) && !MentionsXid(event.message)) return;
                            if (EventTime(event) < since || Ignored(options, XidIn(event.message)))
                              return;
                            seen.push_back(StrCat(event.reason, ": ", event.message));
                          },
                          continue_token));
                      return continue_token;
                    }));
    if (!seen.empty()) {
      found.push_back({node->name, StrCat("XID errors during the soak (node events): ",
                                          absl::StrJoin(seen, "; "))});
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string XidQuery(absl::Duration window) {
  std::string range = StrCat("[", absl::ToInt64Seconds(window), "s]");
  return StrCat("sum by (Hostname, xid) (increase(gpunode_xid_errors_total", range,
                ")) > 0 or sum by (Hostname, xid) (gpunode_xid_errors_total unless "
                "gpunode_xid_errors_total offset ",
                absl::ToInt64Seconds(window), "s)");
}

absl::StatusOr<std::vector<Regression>> CheckSoak(kube::Client& client, const FleetPool& pool,
                                                  absl::Time since, const UpgradeOptions& options,
                                                  core::Env& env) {
  std::vector<Regression> found;
  if (options.regress_on_xids && !options.prometheus.empty()) {
    RETURN_IF_ERROR(XidsFromPrometheus(pool, since, options, env, found));
  } else if (options.regress_on_xids) {
    RETURN_IF_ERROR(XidsFromEvents(client, pool, since, options, found));
  }
  if (!options.regress_on_gpus && !options.regress_on_verify) return found;
  // verify covers Ready, the labels, the device plugin and every GPU healthy (allocatable =
  // capacity = the physical count); without its smoke pod, since the pool's GPUs are the
  // workloads' now.
  VerifyOptions verify = options.verify;
  verify.selector.clear();
  verify.nodes.clear();
  for (const FleetNode* node : pool.nodes) verify.nodes.push_back(node->name);
  verify.count_label = options.count_label;
  verify.run_smoke_pod = false;
  std::ostream discarded(nullptr);  // verify's step-by-step lines, every check: not wanted here
  ASSIGN_OR_RETURN(VerifyReport report, RunVerify(client, verify, env, discarded));
  for (const NodeVerdict& verdict : report.nodes) {
    std::vector<std::string> failed;
    for (const VerifyStep& step : verdict.steps) {
      if (step.result != StepResult::kFail) continue;
      bool gpus = step.step == VerifyCheck::kReady || step.step == VerifyCheck::kCapacity;
      if (gpus ? options.regress_on_gpus : options.regress_on_verify) {
        failed.push_back(StrCat(VerifyCheckName(step.step), ": ", step.evidence));
      }
    }
    if (!failed.empty()) {
      found.push_back({verdict.node, StrCat("cluster verify: ", absl::StrJoin(failed, "; "))});
    }
  }
  return found;
}

}  // namespace gpunode::cluster
