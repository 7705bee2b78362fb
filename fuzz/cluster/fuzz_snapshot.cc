// Feeds arbitrary bytes to the streaming snapshot reader (as a file and as an API page), then
// runs audit (every finding enabled) and why-pending on whatever it accepted: neither may crash,
// leak or read out of bounds, whatever the input.
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
    // Every finding on: long-running pods, idle pods (every pod at 1%), slow pulls.
    cluster::AuditOptions audit;
    audit.hygiene.now = absl::FromUnixSeconds(1714989600);
    audit.hygiene.max_gpu_pod_age = absl::Hours(1);
    audit.hygiene.idle.emplace();
    for (const kube::PodView& pod : snapshot->pods) {
      audit.hygiene.idle->pods.push_back({std::string(pod.ns), std::string(pod.name), 1});
    }
    audit.slow_pull = absl::Seconds(1);
    cluster::Audit(*snapshot, audit);
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
