#include "cluster/prometheus_query.h"

#include <cstdlib>
#include <memory>

#include "core/status_macros.h"
#include "core/text.h"
#include "kube/api_object.h"
#include "kube/client.h"

namespace gpunode::cluster {
namespace {

namespace od = kube::od;
using core::StrCat;
using kube::FieldKey;
using kube::JsonWalk;

constexpr std::string_view kSource = "Prometheus";
constexpr std::string_view kFixAnswer =
    "expected what /api/v1/query answers; is --prometheus the Prometheus server's URL?";

std::string SeriesName(const std::map<std::string, std::string>& labels) {
  std::string out = "{";
  for (const auto& [k, v] : labels) {
    if (out.size() > 1) out += ",";
    core::StrAppend(&out, k, "=\"", v, "\"");
  }
  return out + "}";
}

// One element of data.result: {"metric": {labels}, "value": [time, "value"]}.
absl::Status ReadSample(od::value& sample, const JsonWalk& walk, PromSample& out) {
  std::string value;
  size_t elements = 0;
  RETURN_IF_ERROR(
      walk.ForEachField(sample, "data.result[]", [&](const FieldKey& key, od::value& val) {
        if (key == "metric") {
          kube::Labels labels;
          RETURN_IF_ERROR(walk.ReadStringMap(val, "data.result[].metric", labels));
          for (const auto& [k, v] : labels) out.labels[std::string(k)] = std::string(v);
          return absl::OkStatus();
        }
        if (key != "value") return absl::OkStatus();
        return walk.ForEachElement(
            val, "data.result[].value",
            [&](od::value& element) {
              // [0] is the evaluation time; [1] the value, a string.
              if (elements++ != 1) return absl::OkStatus();
              return walk.ReadStringCopy(element, "data.result[].value[1]", value);
            },
            "[time, \"value\"]", "[time, \"value\"]");
      }));
  if (elements != 2) {
    return walk.Fail("data.result[].value", StrCat("expected [time, \"value\"]; ", kFixAnswer));
  }
  char* end = nullptr;
  out.value = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0') {
    return absl::InvalidArgumentError(
        StrCat(kSource, ": value \"", value, "\" of ", SeriesName(out.labels), " is not a number"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<PromSample>> ParseInstantVector(std::string_view body) {
  // Copies: the answer's text lives only while it is read.
  std::string status, error, result_type;
  bool has_result = false;
  std::vector<PromSample> out;
  RETURN_IF_ERROR(kube::ReadJsonObject(
      body, kSource, "query answer", kFixAnswer,
      [&](od::object& obj, const JsonWalk& walk) -> absl::Status {
        return walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
          if (key == "status") return walk.ReadStringCopy(val, "status", status);
          if (key == "error") return walk.ReadStringCopy(val, "error", error);
          if (key != "data") return absl::OkStatus();
          return walk.ForEachField(val, "data", [&](const FieldKey& key, od::value& val) {
            if (key == "resultType") {
              return walk.ReadStringCopy(val, "data.resultType", result_type);
            }
            if (key != "result") return absl::OkStatus();
            has_result = true;
            return walk.ForEachElement(val, "data.result", [&](od::value& sample) {
              return ReadSample(sample, walk, out.emplace_back());
            });
          });
        });
      }));
  if (status != "success") {
    return absl::InvalidArgumentError(
        StrCat(kSource, ": the query failed: ", error.empty() ? "no error" : error));
  }
  if (result_type != "vector" || !has_result) {
    return absl::InvalidArgumentError(
        StrCat(kSource,
               ": data.result is not an instant vector; expected what /api/v1/query "
               "answers"));
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
