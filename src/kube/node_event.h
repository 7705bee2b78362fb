// A core/v1 Event about a node, where `kubectl describe node` and `kubectl get events` show it.
// Needs RBAC `create` on events in the default namespace (where node events live).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "kube/client.h"

namespace gpunode::kube {

struct NodeEvent {
  std::string node;
  std::string type = "Warning";  // or Normal
  std::string reason;            // CamelCase, e.g. DevicePluginConfigRefused
  std::string message;
  std::string component;  // the reporter, e.g. gpunode-device-plugin
};

absl::Status PostNodeEvent(Client& client, const NodeEvent& event);

}  // namespace gpunode::kube
