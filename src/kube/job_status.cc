#include "kube/job_status.h"

#include "kube/api_object.h"

namespace gpunode::kube {

namespace {

absl::Status ReadJobMetadata(od::value& metadata, const JsonWalk& walk, JobStatus& out) {
  return walk.ForEachField(metadata, "metadata", [&](const FieldKey& key, od::value& val) {
    if (key == "name") return walk.ReadString(val, "metadata.name", walk.where().name);
    if (key == "namespace") return walk.ReadString(val, "metadata.namespace", walk.where().ns);
    if (key != "annotations") return absl::OkStatus();
    Labels annotations;
    RETURN_IF_ERROR(walk.ReadStringMap(val, "metadata.annotations", annotations));
    for (const auto& [k, v] : annotations) out.annotations.emplace_back(k, v);
    return absl::OkStatus();
  });
}

absl::Status ReadJobCondition(od::value& condition, const JsonWalk& walk, JobCondition& out) {
  return walk.ForEachField(
      condition, "status.conditions[]", [&](const FieldKey& key, od::value& val) {
        if (key == "type") return walk.ReadStringCopy(val, "status.conditions[].type", out.type);
        if (key == "status")
          return walk.ReadStringCopy(val, "status.conditions[].status", out.status);
        if (key == "reason")
          return walk.ReadStringCopy(val, "status.conditions[].reason", out.reason);
        if (key == "message") {
          return walk.ReadStringCopy(val, "status.conditions[].message", out.message);
        }
        return absl::OkStatus();
      });
}

absl::Status ReadJobStatusFields(od::value& status, const JsonWalk& walk, JobStatus& out) {
  return walk.ForEachField(status, "status", [&](const FieldKey& key, od::value& val) {
    if (key == "succeeded") return walk.ReadInt(val, "status.succeeded", out.succeeded);
    if (key != "conditions") return absl::OkStatus();
    return walk.ForEachElement(val, "status.conditions", [&](od::value& condition) {
      return ReadJobCondition(condition, walk, out.conditions.emplace_back());
    });
  });
}

}  // namespace

std::string_view JobStatus::Annotation(std::string_view key) const {
  for (const auto& [k, v] : annotations) {
    if (k == key) return v;
  }
  return {};
}

const JobCondition* JobStatus::TrueCondition(std::string_view type) const {
  for (const JobCondition& c : conditions) {
    if (c.type == type && c.status == "True") return &c;
  }
  return nullptr;
}

absl::StatusOr<JobStatus> ReadJobStatus(std::string_view json, std::string_view source) {
  JobStatus out;
  RETURN_IF_ERROR(ReadApiObject(json, source, "Job", [&](od::object& obj, const JsonWalk& walk) {
    return walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
      if (key == "metadata") return ReadJobMetadata(val, walk, out);
      if (key == "status") return ReadJobStatusFields(val, walk, out);
      return absl::OkStatus();
    });
  }));
  return out;
}

}  // namespace gpunode::kube
