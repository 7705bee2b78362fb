// Keeps the labeller's labels on its own Node through the API server (`gpunode labels --write
// node`): reads the Node and merge-patches it only when its labels differ from those wanted, so
// that an unchanged node is not written (each write of a Node wakes every watcher of Nodes).
#pragma once

#include <memory>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "kube/client.h"
#include "labels/gfd_labels.h"

namespace gpunode::labels {

// What a 403 says to do: the grants and the admission policy of deploy/labels.
inline constexpr char kNodeLabelsForbiddenHint[] =
    "the labeller may change only its own Node's labels: apply deploy/labels/rbac.yaml (its "
    "ServiceAccount, RBAC and ValidatingAdmissionPolicy) and run it in a pod on the node it names "
    "(NODE_NAME from spec.nodeName)";

class NodeLabelWriter {
 public:
  NodeLabelWriter(std::unique_ptr<kube::Client> client, std::string node)
      : client_(std::move(client)), node_(std::move(node)) {}

  struct Written {
    bool patched = false;
    int set = 0;      // labels added or changed
    int removed = 0;  // labels written before and no longer wanted
  };

  // Gives the Node the labels `want` and removes the ones this labeller wrote before and no
  // longer writes; other labels stay. A key of `refresh_only_with_change` is written only along
  // with another change (labels/node_label_patch.h). A Node that does not exist is NotFound, a
  // request the API server forbids PermissionDenied naming deploy/labels.
  absl::StatusOr<Written> Write(const Labels& want,
                                const std::set<std::string>& refresh_only_with_change = {});

  const std::string& node() const { return node_; }

 private:
  std::unique_ptr<kube::Client> client_;
  std::string node_;
};

}  // namespace gpunode::labels
