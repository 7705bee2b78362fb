// A core/v1 Event about any object, where `kubectl describe` and `kubectl get events` show it.
// The Event lives in the object's namespace ("default" for a cluster-scoped object such as a
// Node), so the poster needs RBAC `create` on events there.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "kube/client.h"

namespace gpunode::kube {

// What an Event's involvedObject names. `ns` is empty for cluster-scoped objects.
struct ObjectRef {
  std::string api_version;  // "v1", "batch/v1"
  std::string kind;
  std::string ns;
  std::string name;
  std::string uid;
};

struct ObjectEvent {
  ObjectRef object;
  std::string type = "Normal";  // or Warning
  std::string reason;           // CamelCase, e.g. NodeDraining
  std::string message;
  std::string component;  // the reporter, e.g. gpunode-cluster-drain
  std::string instance;   // which copy of it reported: a node's name, a host's
};

absl::Status PostEvent(Client& client, const ObjectEvent& event, absl::Time now);

}  // namespace gpunode::kube
