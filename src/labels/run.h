// `gpunode labels` at run time: GPU feature discovery's labels written once or on an interval to
// NFD's features file or onto the Node, relabelled when the config or its node label changes,
// until a stop signal.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "core/env.h"
#include "nvml/library.h"

namespace gpunode::labels {

inline constexpr char kDefaultOutput[] = "/etc/kubernetes/node-feature-discovery/features.d/gfd";
inline constexpr char kDefaultInterval[] = "60s";
inline constexpr char kDefaultMachineTypeFile[] = "/sys/class/dmi/id/product_name";

// The settings GFD also reads from its environment are nullopt unless their flag was given: the
// flag wins, then the variable, then the default.
struct Options {
  std::optional<std::string> output;             // GFD_OUTPUT_FILE; "-" or "": stdout
  std::optional<bool> oneshot;                   // GFD_ONESHOT
  std::optional<std::string> interval;           // GFD_SLEEP_INTERVAL
  std::optional<std::string> config_file;        // CONFIG_FILE, GFD_CONFIG_FILE
  std::optional<std::string> mig_strategy;       // MIG_STRATEGY, GFD_MIG_STRATEGY
  std::optional<std::string> machine_type_file;  // GFD_MACHINE_TYPE_FILE, under the host root
  std::optional<bool> no_timestamp;              // GFD_NO_TIMESTAMP
  bool stable_labels = false;
  std::string stable_label_prefix;
  std::string write = "file";  // file: NFD's features.d; node: the Node's labels
  std::string node_name;
  std::string driver_root = "/";
  // With a simulator NVML that does not open is a bad spec, never a node without a driver.
  bool simulated = false;
  nvml::Opener open_nvml;
};

// Returns when labelled once (oneshot) or when a stop is requested of `env` (the binary's:
// SIGINT or SIGTERM); an error is kInvalidArgument where the flags, the environment or the config
// are wrong. The host's files are read through `env`. Take the stop signals before calling: the
// label's watch starts a thread.
absl::Status Run(const Options& options, core::Env& env);

}  // namespace gpunode::labels
