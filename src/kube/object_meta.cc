#include "kube/object_meta.h"

#include "kube/api_object.h"
#include "kube/owner_reader.h"

namespace gpunode::kube {

std::optional<std::string_view> ObjectMeta::Label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return std::nullopt;
}

absl::Status ReadObjectMetaOf(od::object& obj, const JsonWalk& walk, ObjectMeta& out) {
  return walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
    if (key != "metadata") return absl::OkStatus();
    return walk.ForEachField(val, "metadata", [&](const FieldKey& key, od::value& val) {
      if (key == "name") {
        RETURN_IF_ERROR(walk.ReadString(val, "metadata.name", walk.where().name));
        out.name.assign(walk.where().name);
      } else if (key == "namespace") {
        RETURN_IF_ERROR(walk.ReadString(val, "metadata.namespace", walk.where().ns));
        out.ns.assign(walk.where().ns);
      } else if (key == "labels") {
        Labels labels;
        RETURN_IF_ERROR(walk.ReadStringMap(val, "metadata.labels", labels));
        for (const auto& [k, v] : labels) out.labels.emplace_back(k, v);
      } else if (key == "ownerReferences") {
        ControllerRef controller;
        RETURN_IF_ERROR(ReadControllerRef(val, walk, controller));
        out.has_controller = controller.found;
        out.controller_api_version.assign(controller.api_version);
        out.controller_kind.assign(controller.kind);
        out.controller_name.assign(controller.name);
        out.controller_uid.assign(controller.uid);
      }
      return absl::OkStatus();
    });
  });
}

absl::StatusOr<ObjectMeta> ReadObjectMeta(std::string_view json, std::string_view source,
                                          std::string_view kind) {
  ObjectMeta out;
  RETURN_IF_ERROR(ReadApiObject(json, source, kind, [&](od::object& obj, const JsonWalk& walk) {
    return ReadObjectMetaOf(obj, walk, out);
  }));
  return out;
}

absl::Status ReadObjectMetaPage(std::string_view json, std::string_view source,
                                std::string_view item_kind, std::vector<ObjectMeta>& items,
                                std::string& continue_token) {
  return ReadApiList(json, source, item_kind, continue_token,
                     [&](od::object& item, const JsonWalk& walk) {
                       return ReadObjectMetaOf(item, walk, items.emplace_back());
                     });
}

}  // namespace gpunode::kube
