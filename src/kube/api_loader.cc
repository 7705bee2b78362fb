#include "kube/api_loader.h"

#include "core/status_macros.h"
#include "core/text.h"

namespace gpunode::kube {

using core::StrCat;
using core::View;

absl::StatusOr<ClusterSnapshot> LoadFromApi(Client& client, const ApiQuery& query,
                                            const ReadOptions& options, LoadNotes* notes) {
  SnapshotBuilder builder(options);
  auto into_builder = [&](simdjson::padded_string_view body,
                          std::string_view source) -> absl::StatusOr<std::string> {
    std::string continue_token;
    RETURN_IF_ERROR(builder.Add(body, source, &continue_token));
    return continue_token;
  };
  ListOptions all;
  all.limit = query.page_size;
  if (query.all_nodes) {
    ListOptions nodes = all;
    nodes.label_selector = query.node_label_selector;
    RETURN_IF_ERROR(client.List("/api/v1/nodes", nodes, into_builder));
  } else if (!query.node_name.empty()) {
    std::string path = StrCat("/api/v1/nodes/", UrlEncode(query.node_name));
    ASSIGN_OR_RETURN(std::string body, client.Get(path));
    RETURN_IF_ERROR(builder.Add(PadInPlace(body), StrCat("GET ", path)));
  }
  if (query.pods) {
    ListOptions pods = all;
    pods.field_selector = query.pod_field_selector;
    pods.label_selector = query.pod_label_selector;
    RETURN_IF_ERROR(client.List("/api/v1/pods", pods, into_builder));
  }
  if (query.pdbs) {
    RETURN_IF_ERROR(client.List("/apis/policy/v1/poddisruptionbudgets", all, into_builder));
  }
  // Optional kinds: without the permission, audit still has nodes and pods to report on.
  auto optional_list = [&](std::string_view path, const ListOptions& list,
                           std::string_view what) -> absl::Status {
    absl::Status st = client.List(path, list, into_builder);
    if (absl::IsPermissionDenied(st) && notes != nullptr) {
      notes->skipped.push_back(StrCat(what, ": ", View(st.message())));
      return absl::OkStatus();
    }
    return st;
  };
  if (query.jobs) {
    RETURN_IF_ERROR(optional_list("/apis/batch/v1/jobs", all, "jobs"));
    RETURN_IF_ERROR(optional_list("/apis/batch/v1/cronjobs", all, "cronjobs"));
  }
  if (query.events) {
    // Only pod events name image pulls; the server filters the rest out.
    ListOptions events = all;
    events.field_selector = "involvedObject.kind=Pod";
    RETURN_IF_ERROR(optional_list("/api/v1/events", events, "events"));
  }
  ClusterSnapshot snapshot = builder.Take();
  // Listing succeeded, so the absence of budgets is itself an answer.
  if (query.pdbs) snapshot.has_pdbs = true;
  return snapshot;
}

}  // namespace gpunode::kube
