// The node label nvidia.com/device-plugin.config, which picks a node's config from a directory of
// configs (a ConfigMap mounted whole), followed through the API server by the device plugin, the
// MPS control daemon and the labeller alike; and the node events that report a config the label
// selects but that cannot be used.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/env.h"
#include "kube/client.h"
#include "kube/node_label_watch.h"

namespace gpunode::plugin_config {

class ConfigLabelSource {
 public:
  // NODE_NAME (set from spec.nodeName) names the node; the API server is found as kubectl finds
  // it (in a pod: the service account). Without either the label is not followed, which is logged
  // once, and nullopt returned. Waits up to 10 s for the node to be read: a label that arrives
  // later is a change. Start it after the stop signals are blocked (it starts a thread).
  // `component` reports the events: gpunode-device-plugin, gpunode-labels. The API clients wait
  // between retries on `env`, which outlives the source.
  static std::optional<ConfigLabelSource> Follow(std::string component, core::Env& env);

  // Whether NODE_NAME names the node, without which the label is not followed; and the line
  // that says so, for a caller that says it later than Follow would.
  static bool NodeNamed();
  static void SayNotFollowed();

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

}  // namespace gpunode::plugin_config
