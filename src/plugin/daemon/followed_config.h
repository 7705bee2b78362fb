// The config a node daemon starts with from the device plugin's sources, and how it follows it.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/env.h"
#include "plugin/daemon/config_following.h"
#include "plugin_config/config_label_source.h"
#include "plugin_config/sources.h"

namespace gpunode::plugin {

// The device plugin's config as a node daemon starts with it and follows it, the plugin and the
// MPS control daemon alike: a directory of configs is picked from by the node label, followed
// through the API server (`component` posts the events), and a label naming a config that is
// missing or broken starts the default instead, said in an event; the config's directory is
// watched. `refused_outcome` ends the event of a later change that is not applied ("the running
// config stays"). Start it after the stop signals are blocked (it starts a thread).
struct FollowedConfig {
  plugin_config::ResolvedConfig config;  // to start with
  ConfigLoader loader;
  ConfigFollowing following;
  // What `loader` and `following` read and post through.
  std::shared_ptr<plugin_config::ConfigLabelSource> label;
};
absl::StatusOr<FollowedConfig> FollowConfig(const plugin_config::ConfigLayer& flags,
                                            const std::optional<std::string>& config_file,
                                            const std::optional<std::string>& default_config,
                                            const std::string& component,
                                            const std::string& refused_outcome, core::Env& env);

}  // namespace gpunode::plugin
