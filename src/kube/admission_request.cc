#include "kube/admission_request.h"

#include "core/json_field.h"
#include "core/text.h"
#include "kube/api_object.h"
#include "kube/snapshot_reader.h"
#include "nlohmann/json.hpp"

namespace gpunode::kube {

using core::StrCat;

namespace {

absl::Status ReadAdmissionRequestFields(od::value& request, const JsonWalk& walk,
                                        AdmissionRequest& out) {
  return walk.ForEachField(request, "request", [&](const FieldKey& key, od::value& val) {
    if (key == "uid") return walk.ReadStringCopy(val, "request.uid", out.uid);
    if (key == "kind") {
      return walk.ForEachField(val, "request.kind", [&](const FieldKey& key, od::value& val) {
        if (key != "kind") return absl::OkStatus();
        return walk.ReadStringCopy(val, "request.kind.kind", out.kind);
      });
    }
    if (key == "operation") return walk.ReadStringCopy(val, "request.operation", out.operation);
    if (key == "subResource") {
      return walk.ReadStringCopy(val, "request.subResource", out.sub_resource);
    }
    if (key == "namespace") return walk.ReadStringCopy(val, "request.namespace", out.ns);
    if (key != "object") return absl::OkStatus();
    bool null = false;
    RETURN_IF_ERROR(walk.IsNull(val, "request.object", "an object", null));
    if (null) return absl::OkStatus();
    od::object object;
    RETURN_IF_ERROR(walk.Check(val.get_object().get(object), "request.object", "an object"));
    std::string_view text;
    RETURN_IF_ERROR(walk.Check(object.raw_json().get(text), "request.object", "an object"));
    out.object.assign(text);
    return absl::OkStatus();
  });
}

}  // namespace

absl::StatusOr<AdmissionRequest> ReadAdmissionReview(std::string_view json,
                                                     std::string_view source) {
  AdmissionRequest out;
  std::string kind;
  bool has_request = false;
  RETURN_IF_ERROR(
      ReadApiObject(json, source, "AdmissionReview", [&](od::object& obj, const JsonWalk& walk) {
        return walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
          if (key == "kind") return walk.ReadStringCopy(val, "kind", kind);
          if (key == "apiVersion") return walk.ReadStringCopy(val, "apiVersion", out.api_version);
          if (key != "request") return absl::OkStatus();
          bool null = false;
          RETURN_IF_ERROR(walk.IsNull(val, "request", "an object", null));
          has_request = !null;
          return ReadAdmissionRequestFields(val, walk, out);
        });
      }));
  if (kind != "AdmissionReview" || !has_request) {
    return absl::InvalidArgumentError(
        StrCat(source, ": expected an AdmissionReview with a request"));
  }
  if (out.uid.empty()) {
    return absl::InvalidArgumentError(StrCat(source, ": AdmissionReview request has no uid"));
  }
  if (out.api_version.empty()) out.api_version = "admission.k8s.io/v1";
  return out;
}

absl::StatusOr<ClusterSnapshot> ReadAdmissionObject(std::string_view object,
                                                    std::string_view kind) {
  using json = nlohmann::json;
  // The object's text came out of a review that parsed, so it parses again.
  json fixed = json::parse(object, nullptr, /*allow_exceptions=*/false);
  if (!fixed.is_object()) {
    return absl::InvalidArgumentError(StrCat("the request carries no ", kind, " object"));
  }
  fixed["kind"] = std::string(kind);
  if (!fixed.contains("metadata") || !fixed["metadata"].is_object()) {
    fixed["metadata"] = json::object();
  }
  json& meta = fixed["metadata"];
  if (!meta.contains("name") || !meta["name"].is_string() || meta["name"] == "") {
    meta["name"] = StrCat(core::JsonString(meta, "generateName", "object-"), "<generated>");
  }
  ReadOptions options;
  options.keep_pod_details = [](const PodView&) { return true; };
  return ReadSnapshotText(fixed.dump(), "admission request", options);
}

}  // namespace gpunode::kube
