#include "kube/owner_reader.h"

namespace gpunode::kube {

absl::Status ReadControllerRef(od::value& refs, const JsonWalk& walk, ControllerRef& out) {
  return walk.ForEachElement(refs, "metadata.ownerReferences", [&](od::value& ref) {
    std::string_view api_version, kind, name, uid;
    bool controller = false;
    RETURN_IF_ERROR(walk.ForEachField(
        ref, "metadata.ownerReferences[]", [&](const FieldKey& key, od::value& val) {
          if (key == "apiVersion") {
            return walk.ReadString(val, "metadata.ownerReferences[].apiVersion", api_version);
          }
          if (key == "kind") return walk.ReadString(val, "metadata.ownerReferences[].kind", kind);
          if (key == "name") return walk.ReadString(val, "metadata.ownerReferences[].name", name);
          if (key == "uid") return walk.ReadString(val, "metadata.ownerReferences[].uid", uid);
          if (key == "controller") {
            return walk.ReadBool(val, "metadata.ownerReferences[].controller", controller);
          }
          return absl::OkStatus();
        }));
    if (controller) out = {true, api_version, kind, name, uid};
    return absl::OkStatus();
  });
}

}  // namespace gpunode::kube
