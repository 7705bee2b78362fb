#include "labels/node_label_writer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "labels/node_label_patch.h"

namespace gpunode::labels {

absl::StatusOr<NodeLabelWriter::Written> NodeLabelWriter::Write(
    const Labels& want, const std::set<std::string>& refresh_only_with_change) {
  kube::HttpRequest get;
  get.path = absl::StrCat("/api/v1/nodes/", kube::UrlEncode(node_));
  ASSIGN_OR_RETURN(kube::HttpResponse node, client_->Send(get));
  if (node.status == 404) {
    return absl::NotFoundError(
        absl::StrCat("node ", node_,
                     " not found: --node-name (or NODE_NAME) must name the node the "
                     "labeller runs on; set it from the pod's spec.nodeName"));
  }
  if (node.status < 200 || node.status > 299) {
    return kube::StatusFromResponse(get, node, kNodeLabelsForbiddenHint);
  }
  ASSIGN_OR_RETURN(NodeLabelState state, ReadNodeLabelState(node.body, node_));
  std::optional<NodeLabelPatch> patch = MakeNodeLabelPatch(state, want, refresh_only_with_change);
  if (!patch) return Written{};
  kube::HttpRequest request;
  request.method = "PATCH";
  request.path = get.path;
  request.content_type = "application/merge-patch+json";
  request.body = patch->patch.dump();
  ASSIGN_OR_RETURN(kube::HttpResponse patched, client_->Send(request));
  if (patched.status < 200 || patched.status > 299) {
    return kube::StatusFromResponse(request, patched, kNodeLabelsForbiddenHint);
  }
  return Written{.patched = true, .set = patch->set, .removed = patch->removed};
}

}  // namespace gpunode::labels
