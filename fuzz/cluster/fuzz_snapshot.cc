// Feeds arbitrary bytes to the streaming snapshot reader (as a file and as an API page), then
// runs audit and why-pending on whatever it accepted: neither may crash, leak or read out of
// bounds, whatever the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cluster/audit.h"
#include "cluster/why_pending.h"
#include "kube/snapshot_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpunode;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kube::ReadOptions options;
  options.keep_pod_details = [](const kube::PodView& p) {
    return p.phase == kube::PodPhase::kPending;
  };
  absl::StatusOr<kube::ClusterSnapshot> snapshot = kube::ReadSnapshotText(text, "fuzz", options);
  if (snapshot.ok()) {
    cluster::Audit(*snapshot);
    for (const kube::PodView& pod : snapshot->pods) {
      if (pod.details) (void)cluster::WhyPending(*snapshot, pod.ns, pod.name);
    }
  }
  // The same bytes as an API list page, which also reads metadata.continue.
  simdjson::padded_string padded(text);
  kube::SnapshotBuilder builder;
  std::string token;
  (void)builder.Add(padded, "page", &token);
  return 0;
}
