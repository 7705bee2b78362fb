#include "cluster/prometheus_idle.h"

#include <cstdlib>

#include "core/json_field.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {
namespace {

using json = nlohmann::json;
using core::StrCat;

constexpr std::string_view kSource = "Prometheus";

}  // namespace

std::string IdleQuery(absl::Duration window) {
  return StrCat("max by (namespace, pod) (max_over_time(DCGM_FI_DEV_GPU_UTIL{pod!=\"\"}[",
                absl::ToInt64Seconds(window), "s]))");
}

absl::StatusOr<std::vector<PodUtilization>> ParseUtilizationAnswer(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        StrCat(kSource, ": the answer is not JSON; is --prometheus the Prometheus server's URL?"));
  }
  if (core::JsonString(j, "status") != "success") {
    std::string error = core::JsonString(j, "error", "no error");
    return absl::InvalidArgumentError(StrCat(kSource, ": the query failed: ", error));
  }
  const json* result = nullptr;
  if (j.contains("data") && j["data"].is_object() &&
      core::JsonString(j["data"], "resultType") == "vector" && j["data"].contains("result") &&
      j["data"]["result"].is_array()) {
    result = &j["data"]["result"];
  }
  if (result == nullptr) {
    return absl::InvalidArgumentError(
        StrCat(kSource,
               ": data.result is not an instant vector; expected what /api/v1/query "
               "answers"));
  }
  std::vector<PodUtilization> out;
  for (const json& sample : *result) {
    if (!sample.is_object() || !sample.contains("metric") || !sample["metric"].is_object() ||
        !sample.contains("value") || !sample["value"].is_array() || sample["value"].size() != 2 ||
        !sample["value"][1].is_string()) {
      return absl::InvalidArgumentError(
          StrCat(kSource, ": a sample without metric labels or [time, \"value\"]"));
    }
    const json& metric = sample["metric"];
    PodUtilization u;
    if (metric.contains("namespace") && metric["namespace"].is_string()) u.ns = metric["namespace"];
    if (metric.contains("pod") && metric["pod"].is_string()) u.pod = metric["pod"];
    if (u.ns.empty() || u.pod.empty()) continue;
    std::string value = sample["value"][1];
    char* end = nullptr;
    u.max_percent = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0') {
      return absl::InvalidArgumentError(
          StrCat(kSource, ": value \"", value, "\" of pod ", u.ns, "/", u.pod, " is not a number"));
    }
    out.push_back(std::move(u));
  }
  return out;
}

absl::StatusOr<IdleEvidence> QueryIdleGpus(const std::string& base_url, absl::Duration window,
                                           double below_percent, absl::Duration timeout) {
  kube::ClusterAccess access;
  access.server = base_url;
  while (!access.server.empty() && access.server.back() == '/') access.server.pop_back();
  access.description = StrCat("Prometheus at ", access.server);
  kube::TransportOptions transport_options;
  transport_options.request_timeout = timeout;
  ASSIGN_OR_RETURN(std::unique_ptr<kube::HttpTransport> transport,
                   kube::NewCurlTransport(access, transport_options));
  IdleEvidence evidence;
  evidence.window = window;
  evidence.below_percent = below_percent;
  evidence.query = IdleQuery(window);
  kube::HttpRequest request;
  request.path = StrCat("/api/v1/query?query=", kube::UrlEncode(evidence.query));
  absl::StatusOr<kube::HttpResponse> response = transport->Send(request);
  if (!response.ok()) {
    return absl::UnavailableError(
        StrCat("--prometheus ", access.server, ": ", core::View(response.status().message())));
  }
  if (response->status != 200 && response->status != 400 && response->status != 422) {
    return absl::UnavailableError(StrCat("--prometheus ", access.server, ": GET /api/v1/query: ",
                                         response->status, "; is it the Prometheus server's URL?"));
  }
  absl::StatusOr<std::vector<PodUtilization>> pods = ParseUtilizationAnswer(response->body);
  if (!pods.ok()) {
    return absl::InvalidArgumentError(
        StrCat("--prometheus ", access.server, ": ", core::View(pods.status().message())));
  }
  evidence.pods = std::move(*pods);
  return evidence;
}

}  // namespace gpunode::cluster
