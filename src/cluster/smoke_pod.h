// The smoke pod of `cluster verify`: a named, labelled, one-shot pod pinned to one node that
// requests GPUs, tolerates the node's taints and its cordon, and reports what it saw. It is
// always deleted afterwards (timeout and interruption included), and a leftover of an earlier
// run (the same name) is deleted before it is created.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "cluster/verify.h"
#include "core/env.h"
#include "kube/client.h"
#include "kube/node_view.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {

inline constexpr std::string_view kSmokePodPrefix = "gpunode-verify-";
inline constexpr std::string_view kSmokePodAppLabel = "gpunode-verify";

// The pod's name for a node.
std::string SmokePodName(std::string_view node);

// The manifest: `gpus` nvidia.com/gpu on `node`.
nlohmann::json SmokePodManifest(const kube::NodeView& node, int64_t gpus,
                                const VerifyOptions& options);

// What the pod's log says: for gpunode's doctor report, container.visible-devices must be ok;
// for another image, the pod must have succeeded. Fills result, evidence and fix.
void JudgeSmokePod(std::string_view phase, std::string_view log, bool doctor, int64_t gpus,
                   VerifyStep& step);

// The same when the pod's log could not be read (`why`): another image's pod is judged by its
// end alone; gpunode's doctor pod fails, its report being the evidence.
void JudgeSmokePodWithoutLog(std::string_view phase, const absl::Status& why, bool doctor,
                             int64_t gpus, VerifyStep& step);

// The workload pod's name for a node, and its manifest: the smoke pod's with the workload's
// image and command in a container named "workload".
std::string WorkloadPodName(std::string_view node);
nlohmann::json WorkloadPodManifest(const kube::NodeView& node, int64_t gpus,
                                   const VerifyOptions& options);

// The workload's end: passed when the pod succeeded; otherwise its exit code (and reason) and the
// last line of its log.
void JudgeWorkload(std::string_view phase, std::string_view exit_detail, std::string_view log,
                   int64_t gpus, VerifyStep& step);

// Creates the pod, waits for it to end (or the timeout, or an interruption), judges it and
// deletes it. An error Status only for API failures; the pod is deleted then too.
absl::StatusOr<VerifyStep> RunSmokePod(kube::Client& client, const kube::NodeView& node,
                                       int64_t gpus, const VerifyOptions& options, core::Env& env,
                                       std::ostream& progress);
// The same for the workload pod (VerifyOptions::workload_image).
absl::StatusOr<VerifyStep> RunWorkloadPod(kube::Client& client, const kube::NodeView& node,
                                          int64_t gpus, const VerifyOptions& options,
                                          core::Env& env, std::ostream& progress);

}  // namespace gpunode::cluster
