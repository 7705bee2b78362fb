#include "cluster/prometheus_query.h"

#include <cstdlib>
#include <memory>

#include "core/json_field.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {
namespace {

using json = nlohmann::json;
using core::StrCat;

constexpr std::string_view kSource = "Prometheus";

std::string SeriesName(const std::map<std::string, std::string>& labels) {
  std::string out = "{";
  for (const auto& [k, v] : labels) {
    if (out.size() > 1) out += ",";
    core::StrAppend(&out, k, "=\"", v, "\"");
  }
  return out + "}";
}

}  // namespace

absl::StatusOr<std::vector<PromSample>> ParseInstantVector(std::string_view body) {
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
  std::vector<PromSample> out;
  for (const json& sample : *result) {
    if (!sample.is_object() || !sample.contains("metric") || !sample["metric"].is_object() ||
        !sample.contains("value") || !sample["value"].is_array() || sample["value"].size() != 2 ||
        !sample["value"][1].is_string()) {
      return absl::InvalidArgumentError(
          StrCat(kSource, ": a sample without metric labels or [time, \"value\"]"));
    }
    PromSample s;
    for (const auto& [k, v] : sample["metric"].items()) {
      if (v.is_string()) s.labels[k] = v.get<std::string>();
    }
    std::string value = sample["value"][1];
    char* end = nullptr;
    s.value = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0') {
      return absl::InvalidArgumentError(
          StrCat(kSource, ": value \"", value, "\" of ", SeriesName(s.labels), " is not a number"));
    }
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<std::vector<PromSample>> QueryPrometheus(const std::string& base_url,
                                                        const std::string& query,
                                                        absl::Duration timeout) {
  kube::ClusterAccess access;
  access.server = base_url;
  while (!access.server.empty() && access.server.back() == '/') access.server.pop_back();
  access.description = StrCat("Prometheus at ", access.server);
  kube::TransportOptions transport_options;
  transport_options.request_timeout = timeout;
  ASSIGN_OR_RETURN(std::unique_ptr<kube::HttpTransport> transport,
                   kube::NewCurlTransport(access, transport_options));
  kube::HttpRequest request;
  request.path = StrCat("/api/v1/query?query=", kube::UrlEncode(query));
  absl::StatusOr<kube::HttpResponse> response = transport->Send(request);
  if (!response.ok()) {
    return absl::UnavailableError(
        StrCat("--prometheus ", access.server, ": ", core::View(response.status().message())));
  }
  // 400 and 422 carry Prometheus's own error for a query it refused. A server error is
  // Prometheus (or a proxy before it) unable to answer now; any other status is a URL that does
  // not lead to the query API.
  if (response->status >= 500) {
    return absl::UnavailableError(
        StrCat("--prometheus ", access.server, ": GET /api/v1/query: ", response->status));
  }
  if (response->status != 200 && response->status != 400 && response->status != 422) {
    return absl::InvalidArgumentError(StrCat("--prometheus ", access.server,
                                             ": GET /api/v1/query: ", response->status,
                                             "; is it the Prometheus server's URL?"));
  }
  absl::StatusOr<std::vector<PromSample>> samples = ParseInstantVector(response->body);
  if (!samples.ok()) {
    return absl::InvalidArgumentError(
        StrCat("--prometheus ", access.server, ": ", core::View(samples.status().message())));
  }
  return samples;
}

}  // namespace gpunode::cluster
