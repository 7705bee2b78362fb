#include "kube/node_event.h"

#include "kube/object_event.h"

namespace gpunode::kube {

absl::Status PostNodeEvent(Client& client, const NodeEvent& event) {
  // As the kubelet reports node events: the node's name stands for its uid.
  return PostEvent(
      client,
      {.object =
           {.api_version = "v1", .kind = "Node", .ns = {}, .name = event.node, .uid = event.node},
       .type = event.type,
       .reason = event.reason,
       .message = event.message,
       .component = event.component,
       .instance = event.node},
      client.env().Now());
}

}  // namespace gpunode::kube
