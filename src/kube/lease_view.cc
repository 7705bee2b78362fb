#include "kube/lease_view.h"

#include "kube/api_object.h"

namespace gpunode::kube {

namespace {

absl::Status ReadLeaseSpec(od::value& spec, const JsonWalk& walk, LeaseView& out) {
  return walk.ForEachField(spec, "spec", [&](const FieldKey& key, od::value& val) {
    if (key == "holderIdentity") {
      return walk.ReadStringCopy(val, "spec.holderIdentity", out.holder_identity);
    }
    if (key == "leaseDurationSeconds") {
      return walk.ReadInt(val, "spec.leaseDurationSeconds", out.duration_seconds);
    }
    if (key == "acquireTime") return walk.ReadStringCopy(val, "spec.acquireTime", out.acquire_time);
    if (key == "renewTime") return walk.ReadStringCopy(val, "spec.renewTime", out.renew_time);
    if (key == "leaseTransitions") {
      return walk.ReadInt(val, "spec.leaseTransitions", out.transitions);
    }
    return absl::OkStatus();
  });
}

}  // namespace

nlohmann::json LeaseView::ToJson() const {
  nlohmann::json metadata = {{"name", name}, {"namespace", ns}};
  if (!resource_version.empty()) metadata["resourceVersion"] = resource_version;
  for (const auto& [field, pairs] : {std::pair{"labels", &labels}, {"annotations", &annotations}}) {
    if (pairs->empty()) continue;
    nlohmann::json map = nlohmann::json::object();
    for (const auto& [key, value] : *pairs) map[key] = value;
    metadata[field] = std::move(map);
  }
  nlohmann::json spec = {{"holderIdentity", holder_identity},
                         {"leaseDurationSeconds", duration_seconds},
                         {"leaseTransitions", transitions}};
  if (!acquire_time.empty()) spec["acquireTime"] = acquire_time;
  if (!renew_time.empty()) spec["renewTime"] = renew_time;
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", std::move(metadata)},
          {"spec", std::move(spec)}};
}

absl::StatusOr<LeaseView> ReadLease(std::string_view json, std::string_view source) {
  LeaseView out;
  RETURN_IF_ERROR(ReadApiObject(json, source, "Lease", [&](od::object& obj, const JsonWalk& walk) {
    return walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
      if (key == "metadata") {
        return walk.ForEachField(val, "metadata", [&](const FieldKey& key, od::value& val) {
          if (key == "name") {
            RETURN_IF_ERROR(walk.ReadString(val, "metadata.name", walk.where().name));
            out.name.assign(walk.where().name);
          } else if (key == "namespace") {
            RETURN_IF_ERROR(walk.ReadString(val, "metadata.namespace", walk.where().ns));
            out.ns.assign(walk.where().ns);
          } else if (key == "resourceVersion") {
            return walk.ReadStringCopy(val, "metadata.resourceVersion", out.resource_version);
          } else if (key == "labels" || key == "annotations") {
            const bool labels = key == "labels";
            Labels read;
            RETURN_IF_ERROR(
                walk.ReadStringMap(val, labels ? "metadata.labels" : "metadata.annotations", read));
            for (const auto& [k, v] : read) {
              (labels ? out.labels : out.annotations).emplace_back(k, v);
            }
          }
          return absl::OkStatus();
        });
      }
      if (key == "spec") return ReadLeaseSpec(val, walk, out);
      return absl::OkStatus();
    });
  }));
  return out;
}

}  // namespace gpunode::kube
