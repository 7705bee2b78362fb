// The node label nvidia.com/device-plugin.config, which picks a node's config from a directory of
// configs (a ConfigMap mounted whole), followed through the API server by the device plugin and
// the labeller alike; and the node events that report a config the label selects but that cannot
// be used.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "kube/client.h"
#include "kube/node_label_watch.h"
#include "plugin/daemon/config_following.h"
#include "plugin_config/sources.h"

namespace gpunode::cli {

class ConfigLabelSource {
 public:
  // NODE_NAME (set from spec.nodeName) names the node; the API server is found as kubectl finds
  // it (in a pod: the service account). Without either the label is not followed, which is logged
  // once, and nullopt returned. Waits up to 10 s for the node to be read: a label that arrives
  // later is a change. Start it after the stop signals are blocked (it starts a thread).
  // `component` reports the events: gpunode-device-plugin, gpunode-labels.
  static std::optional<ConfigLabelSource> Follow(std::string component);

  const kube::NodeLabelWatch& watch() const { return *watch_; }
  kube::NodeLabelWatch& watch() { return *watch_; }

  // Posts a Warning node event: `why` a config the label selects is not used, and `outcome`, what
  // runs instead ("the running config stays"). The caller logs. Not thread-safe: one thread
  // posts events.
  void Refused(const std::string& why, const std::string& outcome) const;

 private:
  ConfigLabelSource(std::string node, std::string component,
                    std::unique_ptr<kube::NodeLabelWatch> watch,
                    std::unique_ptr<kube::Client> events)
      : node_(std::move(node)),
        component_(std::move(component)),
        watch_(std::move(watch)),
        events_(std::move(events)) {}

  std::string node_;
  std::string component_;
  std::unique_ptr<kube::NodeLabelWatch> watch_;
  std::unique_ptr<kube::Client> events_;
};

// The device plugin's config as a node daemon starts with it and follows it, the plugin and the
// MPS control daemon alike: a directory of configs is picked from by the node label, followed
// through the API server (`component` posts the events), and a label naming a config that is
// missing or broken starts the default instead, said in an event; the config's directory is
// watched. `refused_outcome` ends the event of a later change that is not applied ("the running
// config stays"). Start it after the stop signals are blocked (it starts a thread).
struct FollowedConfig {
  plugin_config::ResolvedConfig config;  // to start with
  plugin::ConfigLoader loader;
  plugin::ConfigFollowing following;
  std::shared_ptr<ConfigLabelSource> label;  // what `loader` and `following` read and post through
};
absl::StatusOr<FollowedConfig> FollowConfig(const plugin_config::ConfigLayer& flags,
                                            const std::optional<std::string>& config_file,
                                            const std::optional<std::string>& default_config,
                                            const std::string& component,
                                            const std::string& refused_outcome);

}  // namespace gpunode::cli
