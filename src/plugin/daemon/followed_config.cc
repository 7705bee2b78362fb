#include "plugin/daemon/followed_config.h"

#include <filesystem>

#include "core/log.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {

using plugin_config::ConfigLabelSource;

absl::StatusOr<FollowedConfig> FollowConfig(const plugin_config::ConfigLayer& flags,
                                            const std::optional<std::string>& config_file,
                                            const std::optional<std::string>& default_config,
                                            const std::string& component,
                                            const std::string& refused_outcome, core::Env& env) {
  FollowedConfig followed;
  std::string path = plugin_config::ConfigFilePath(config_file, &plugin_config::ProcessEnvironment);
  std::error_code ec;
  bool directory = !path.empty() && std::filesystem::is_directory(path, ec);
  if (directory && ConfigLabelSource::NodeNamed()) {
    if (std::optional<ConfigLabelSource> source = ConfigLabelSource::Follow(component, env)) {
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
  if (directory && !ConfigLabelSource::NodeNamed()) ConfigLabelSource::SayNotFollowed();
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

}  // namespace gpunode::plugin
