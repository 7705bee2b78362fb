#include "cli/config_label.h"

#include <cstdlib>
#include <filesystem>

#include "cli/report_error.h"
#include "core/log.h"
#include "kube/kubeconfig.h"
#include "kube/node_event.h"
#include "plugin_config/config_dir.h"
#include "spdlog/spdlog.h"

namespace gpunode::cli {
namespace {

// How long the start waits for the node's label before it picks the default config.
constexpr absl::Duration kFirstLabelWait = absl::Seconds(10);

bool NodeNamed() {
  const char* node = std::getenv("NODE_NAME");
  return node != nullptr && *node != '\0';
}

void SayLabelNotFollowed() {
  spdlog::info(
      "NODE_NAME is not set: the node label {} is not followed; set it from spec.nodeName to "
      "pick a config per node",
      plugin_config::kConfigLabel);
}

}  // namespace

std::optional<ConfigLabelSource> ConfigLabelSource::Follow(std::string component) {
  if (!NodeNamed()) {
    SayLabelNotFollowed();
    return std::nullopt;
  }
  const char* node = std::getenv("NODE_NAME");
  absl::StatusOr<kube::ClusterAccess> access = kube::ResolveAccess(kube::SourcesFromEnvironment());
  if (absl::IsNotFound(access.status())) {
    access =
        AppendHint(access.status(), "run it in a pod with a service account, or set KUBECONFIG");
  }
  // Two clients: the watch thread owns one, the events go through the other. Node clients keep
  // libcurl out of the daemon where they can (see kube::NewNodeClient).
  absl::StatusOr<std::unique_ptr<kube::Client>> watch_client =
      access.ok() ? kube::NewNodeClient(*access, kube::TransportOptions{}) : access.status();
  absl::StatusOr<std::unique_ptr<kube::Client>> event_client =
      access.ok() ? kube::NewNodeClient(*access, kube::TransportOptions{}) : access.status();
  absl::StatusOr<std::unique_ptr<kube::NodeLabelWatch>> watch =
      watch_client.ok()
          ? kube::NodeLabelWatch::Start(std::move(*watch_client), node, plugin_config::kConfigLabel)
          : watch_client.status();
  if (!watch.ok() || !event_client.ok()) {
    spdlog::warn("the node label {} is not followed: {}", plugin_config::kConfigLabel,
                 (!watch.ok() ? watch.status() : event_client.status()).message());
    return std::nullopt;
  }
  if (!(*watch)->WaitForFirstRead(kFirstLabelWait) || !(*watch)->LastError().empty()) {
    spdlog::warn("node {}: label {} not read yet; starting with the default config", node,
                 plugin_config::kConfigLabel);
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

absl::StatusOr<FollowedConfig> FollowConfig(const plugin_config::ConfigLayer& flags,
                                            const std::optional<std::string>& config_file,
                                            const std::optional<std::string>& default_config,
                                            const std::string& component,
                                            const std::string& refused_outcome) {
  FollowedConfig followed;
  std::string path = plugin_config::ConfigFilePath(config_file, &plugin_config::ProcessEnvironment);
  std::error_code ec;
  bool directory = !path.empty() && std::filesystem::is_directory(path, ec);
  if (directory && NodeNamed()) {
    if (std::optional<ConfigLabelSource> source = ConfigLabelSource::Follow(component)) {
      followed.label = std::make_shared<ConfigLabelSource>(std::move(*source));
    }
  }
  plugin_config::ConfigSelection selection{.default_config = default_config};
  followed.loader = [flags, config_file, selection, label = followed.label] {
    plugin_config::ConfigSelection now = selection;
    if (label) now.label = label->watch().Value();
    return plugin_config::ResolveConfig(flags, config_file, &plugin_config::ProcessEnvironment,
                                        now);
  };
  absl::StatusOr<plugin_config::ResolvedConfig> config = followed.loader();
  if (!config.ok() && followed.label && followed.label->watch().Value()) {
    // A label naming a config that is missing or broken must not stop the daemon (a crash loop
    // would take the node's GPUs away): start with the default and say why.
    spdlog::error("{}; starting with the default config instead", config.status().message());
    followed.label->Refused(std::string(config.status().message()),
                            "starting with the default config instead");
    config = plugin_config::ResolveConfig(flags, config_file, &plugin_config::ProcessEnvironment,
                                          selection);
  }
  if (!config.ok()) return config.status();
  // Said once the config is known to load, so that a config that does not stays one line.
  if (directory && !NodeNamed()) SayLabelNotFollowed();
  followed.config = std::move(*config);
  if (!path.empty()) {
    followed.following.watch_dir =
        directory ? path : std::filesystem::path(path).parent_path().string();
    if (followed.following.watch_dir.empty()) followed.following.watch_dir = ".";
  }
  if (followed.label) {
    std::shared_ptr<ConfigLabelSource> label = followed.label;
    followed.following.label_fd = label->watch().fd();
    followed.following.clear_label = [label] { label->watch().Clear(); };
    followed.following.refused = [label, refused_outcome](const std::string& why) {
      label->Refused(why, refused_outcome);
    };
  }
  return followed;
}

}  // namespace gpunode::cli
