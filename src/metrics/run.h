// `gpunode exporter` at run time: NVML sampled every interval, with pod attribution from the
// kubelet's PodResources and XIDs counted from NVML's events, served on /metrics until a stop is
// requested of the Env; or one scrape printed.
#pragma once

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/env.h"
#include "metrics/listen_address.h"
#include "nvml/library.h"

namespace gpunode::metrics {

struct RunOptions {
  ListenAddress listen;
  absl::Duration interval = absl::Seconds(1);
  bool once = false;  // print one scrape to `out` and return
  // The kubelet's PodResources socket, under the Env's host root; empty: no pod attribution
  // (and no zombie processes).
  std::string pod_resources_socket;
  std::string hostname;     // the Hostname label
  bool dra_labels = false;  // dcgm-exporter's --kubernetes-enable-dra
};

// An error when the server cannot listen. Take the stop signals before calling: the watchers and
// the server start threads.
absl::Status Run(const RunOptions& options, const nvml::Library& library, core::Env& env,
                 std::ostream& out);

}  // namespace gpunode::metrics
