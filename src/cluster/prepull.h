// `gpunode cluster prepull`: a DaemonSet that pulls images onto the selected GPU nodes ahead of
// the pods that need them. Each image runs once as an init container with a no-op command; a
// pause container then keeps the pod in place until the DaemonSet is deleted, and while the pod
// exists its finished init containers keep the images in use, so kubelet's image garbage
// collection spares them.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {

struct PrepullOptions {
  std::vector<std::string> images;
  // Nodes to pull onto, as a label selector: key=value, key!=value, key, !key, comma-separated.
  std::string selector = "nvidia.com/gpu.present=true";
  std::string ns;  // empty: left out of the manifest (kubectl's namespace applies)
  std::string name = "gpunode-prepull";
  // The no-op each image runs. `true` is a builtin of every /bin/sh (CUDA, PyTorch, NGC images
  // all have one), while /bin/true is missing from distroless images.
  std::vector<std::string> command = {"/bin/sh", "-c", "true"};
  std::string pause_image = "registry.k8s.io/pause:3.10";
};

// The DaemonSet, or an error naming the bad image or selector term.
absl::StatusOr<nlohmann::json> PrepullDaemonSet(const PrepullOptions& options);

// Creates the DaemonSet `daemonset` (named ns/name), or replaces it when one of that name exists
// (a rerun with other images).
absl::Status ApplyPrepull(kube::Client& client, const std::string& ns, const std::string& name,
                          const nlohmann::json& daemonset, std::ostream& out);

struct PrepullWait {
  absl::Duration timeout = absl::Minutes(10);
  absl::Duration poll_interval = absl::Seconds(2);
};

// Waits until every selected node runs the pod with the current images (status numberReady and
// updatedNumberScheduled equal desiredNumberScheduled, for the latest generation), printing
// progress. Returns true when done, false at the timeout.
absl::StatusOr<bool> WaitForPrepull(kube::Client& client, const std::string& ns,
                                    const std::string& name, const PrepullWait& wait,
                                    core::Env& env, std::ostream& out);

// Deletes the DaemonSet (and, through garbage collection, its pods); a missing one is reported,
// not an error.
absl::Status DeletePrepull(kube::Client& client, const std::string& ns, const std::string& name,
                           std::ostream& out);

}  // namespace gpunode::cluster
