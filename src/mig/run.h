// `gpunode mig manager` at run time: the node label nvidia.com/mig.config followed through the
// API server, each new layout reconciled by MigManager, until a stop signal.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/env.h"
#include "nvml/library.h"

namespace gpunode::mig {

struct RunOptions {
  std::string node;
  std::string config_file;  // mig-parted's config, read at the start and for every change
  std::vector<std::string> client_labels = {"nvidia.com/gpu.deploy.device-plugin",
                                            "nvidia.com/gpu.deploy.dcgm-exporter"};
  std::vector<std::string> client_selectors = {"app.kubernetes.io/name=gpunode-device-plugin",
                                               "app.kubernetes.io/name=gpunode-exporter"};
  std::string client_timeout = "5m";  // --client-timeout, a duration of 1s or more
  bool force = false;
  std::string driver_root = "/";
  nvml::Opener open_nvml;
};

// Returns when a stop is requested of `env` (the binary's: SIGTERM, SIGINT, SIGQUIT); an error
// when the settings, the config file, NVML or the API server refuse the start
// (kInvalidArgument: the settings or the file). Take the stop signals before calling: the label
// watch starts a thread.
absl::Status Run(const RunOptions& options, core::Env& env);

}  // namespace gpunode::mig
