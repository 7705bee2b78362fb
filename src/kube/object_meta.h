// What gpunode reads of any object's metadata when it reads the object itself from the API
// server (a Namespace's labels, a Node's labels, the controller of a ReplicaSet or a Job, the
// names of a page of pods): a copy that outlives the answer.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kube/json_walk.h"

namespace gpunode::kube {

struct ObjectMeta {
  std::string name;
  std::string ns;
  std::vector<std::pair<std::string, std::string>> labels;
  // The controller ownerReference (controller: true), when there is one.
  bool has_controller = false;
  std::string controller_api_version;
  std::string controller_kind;
  std::string controller_name;
  std::string controller_uid;

  // The label's value; nullopt when the object has no such label.
  std::optional<std::string_view> Label(std::string_view key) const;
};

// Reads the object `obj` (not yet iterated) for its metadata into `out`, naming it in the walk's
// errors as it goes. Errors as in json_walk.h.
absl::Status ReadObjectMetaOf(od::object& obj, const JsonWalk& walk, ObjectMeta& out);

// Reads one object the API server answered with; `kind` names it in errors, `source` the
// answer (api_object.h).
absl::StatusOr<ObjectMeta> ReadObjectMeta(std::string_view json, std::string_view source,
                                          std::string_view kind);

// Reads one page of a list, calling on_item for each item's metadata; `continue_token` receives
// metadata.continue. `item_kind` names the items in errors.
absl::Status ReadObjectMetaPage(std::string_view json, std::string_view source,
                                std::string_view item_kind, std::vector<ObjectMeta>& items,
                                std::string& continue_token);

}  // namespace gpunode::kube
