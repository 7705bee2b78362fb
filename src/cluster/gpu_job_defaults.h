// The webhook's opt-in defaults for GPU work (`POST /defaults`): in namespaces labelled
// gpunode.io/gpu-job-defaults=enabled, GPU pods that a Job or nobody controls get
// spec.activeDeadlineSeconds, and GPU Jobs get spec.ttlSecondsAfterFinished, when they have none.
// Every default added is named in the response's warnings, so kubectl shows it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "cluster/webhook.h"

namespace gpunode::cluster {

inline constexpr std::string_view kJobDefaultsLabel = "gpunode.io/gpu-job-defaults";
inline constexpr std::string_view kJobDefaultsEnabled = "enabled";

struct JobDefaults {
  std::optional<int64_t> active_deadline_seconds;  // --default-active-deadline
  std::optional<int64_t> ttl_seconds;              // --default-ttl
};

// Whether a namespace carries kJobDefaultsLabel=enabled. Asked only when a default would be
// added; an error means "cannot tell", and nothing is changed.
using NamespaceOptedIn = std::function<absl::StatusOr<bool>(std::string_view ns)>;

AdmissionReply ApplyJobDefaults(std::string_view request_body, const JobDefaults& defaults,
                                const NamespaceOptedIn& opted_in);

}  // namespace gpunode::cluster
