#include "plugin_config/config_label_source.h"

#include <cstdlib>

#include "core/log.h"
#include "core/status_text.h"
#include "kube/kubeconfig.h"
#include "kube/node_event.h"
#include "plugin_config/config_dir.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin_config {
namespace {

// How long the start waits for the node's label before it picks the default config.
constexpr absl::Duration kFirstLabelWait = absl::Seconds(10);

}  // namespace

bool ConfigLabelSource::NodeNamed() {
  const char* node = std::getenv("NODE_NAME");
  return node != nullptr && *node != '\0';
}

void ConfigLabelSource::SayNotFollowed() {
  spdlog::info(
      "NODE_NAME is not set: the node label {} is not followed; set it from spec.nodeName to "
      "pick a config per node",
      kConfigLabel);
}

std::optional<ConfigLabelSource> ConfigLabelSource::Follow(std::string component, core::Env& env) {
  if (!NodeNamed()) {
    SayNotFollowed();
    return std::nullopt;
  }
  const char* node = std::getenv("NODE_NAME");
  absl::StatusOr<kube::ClusterAccess> access = kube::ResolveAccess(kube::SourcesFromEnvironment());
  if (absl::IsNotFound(access.status())) {
    access = core::AppendHint(access.status(),
                              "run it in a pod with a service account, or set KUBECONFIG");
  }
  // Two clients: the watch thread owns one, the events go through the other. Node clients keep
  // libcurl out of the daemon where they can (see kube::NewNodeClient).
  absl::StatusOr<std::unique_ptr<kube::Client>> watch_client =
      access.ok() ? kube::NewNodeClient(*access, kube::TransportOptions{}, env) : access.status();
  absl::StatusOr<std::unique_ptr<kube::Client>> event_client =
      access.ok() ? kube::NewNodeClient(*access, kube::TransportOptions{}, env) : access.status();
  absl::StatusOr<std::unique_ptr<kube::NodeLabelWatch>> watch =
      watch_client.ok() ? kube::NodeLabelWatch::Start(std::move(*watch_client), node, kConfigLabel)
                        : watch_client.status();
  if (!watch.ok() || !event_client.ok()) {
    spdlog::warn("the node label {} is not followed: {}", kConfigLabel,
                 (!watch.ok() ? watch.status() : event_client.status()).message());
    return std::nullopt;
  }
  if (!(*watch)->WaitForFirstRead(kFirstLabelWait) || !(*watch)->LastError().empty()) {
    spdlog::warn("node {}: label {} not read yet; starting with the default config", node,
                 kConfigLabel);
  }
  // The start reads the label now; only later changes should wake the caller.
  (*watch)->Clear();
  return ConfigLabelSource(node, std::move(component), std::move(*watch), std::move(*event_client));
}

void ConfigLabelSource::Refused(const std::string& why, const std::string& outcome) const {
  absl::Status st = kube::PostNodeEvent(*events_, {.node = node_,
                                                   .reason = "DevicePluginConfigRefused",
                                                   .message = why + "; " + outcome,
                                                   .component = component_});
  if (!st.ok()) spdlog::warn("node event not posted: {}", st.message());
}

}  // namespace gpunode::plugin_config
