#include "cluster/admission_review.h"

#include "core/json_field.h"
#include "core/text.h"
#include "kube/snapshot_reader.h"

namespace gpunode::cluster {

using json = nlohmann::json;

std::optional<Review> ParseReview(std::string_view body, std::string& error) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    error = "request body is not JSON; expected an admission.k8s.io/v1 AdmissionReview";
    return std::nullopt;
  }
  if (core::JsonString(j, "kind") != "AdmissionReview" || !j.contains("request") ||
      !j["request"].is_object()) {
    error = "expected an AdmissionReview with a request";
    return std::nullopt;
  }
  Review r;
  r.api_version = core::JsonString(j, "apiVersion", "admission.k8s.io/v1");
  const json& req = j["request"];
  if (!req.contains("uid") || !req["uid"].is_string()) {
    error = "AdmissionReview request has no uid";
    return std::nullopt;
  }
  r.uid = req["uid"];
  if (req.contains("kind")) r.kind = core::JsonString(req["kind"], "kind");
  if (req.contains("operation") && req["operation"].is_string()) r.operation = req["operation"];
  if (req.contains("subResource") && req["subResource"].is_string()) {
    r.sub_resource = req["subResource"];
  }
  if (req.contains("namespace") && req["namespace"].is_string()) r.ns = req["namespace"];
  if (req.contains("object")) r.object = req["object"];
  return r;
}

json Response(const Review& r, bool allowed) {
  return {{"apiVersion", r.api_version},
          {"kind", "AdmissionReview"},
          {"response", {{"uid", r.uid}, {"allowed", allowed}}}};
}

AdmissionReply Reply(const json& j) { return {200, j.dump()}; }

absl::StatusOr<kube::ClusterSnapshot> ReadObject(json object, std::string_view kind) {
  if (!object.is_object()) {
    return absl::InvalidArgumentError(core::StrCat("the request carries no ", kind, " object"));
  }
  object["kind"] = std::string(kind);
  if (!object.contains("metadata") || !object["metadata"].is_object())
    object["metadata"] = json::object();
  json& meta = object["metadata"];
  if (!meta.contains("name") || !meta["name"].is_string() || meta["name"] == "") {
    meta["name"] = core::StrCat(core::JsonString(meta, "generateName", "object-"), "<generated>");
  }
  kube::ReadOptions options;
  options.keep_pod_details = [](const kube::PodView&) { return true; };
  return kube::ReadSnapshotText(object.dump(), "admission request", options);
}

}  // namespace gpunode::cluster
