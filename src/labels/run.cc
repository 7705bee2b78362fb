#include "labels/run.h"

#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/directory_watch.h"
#include "core/duration.h"
#include "core/host_root.h"
#include "core/log.h"
#include "core/status_macros.h"
#include "core/status_text.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "labels/gfd_labels.h"
#include "labels/label_file.h"
#include "labels/node_facts.h"
#include "labels/node_label_writer.h"
#include "labels/sanitize.h"
#include "labels/sharing.h"
#include "labels/stable_labels.h"
#include "plugin_config/config.h"
#include "plugin_config/config_dir.h"
#include "plugin_config/config_file.h"
#include "plugin_config/config_label_source.h"
#include "plugin_config/sources.h"
#include "spdlog/spdlog.h"

namespace gpunode::labels {
namespace {

// What --write node labels a node with when NVML does not answer there (no NVIDIA driver, or
// not yet): the device plugin's default affinity needs nvidia.com/gpu.present=true, so the
// node gets no plugin until the driver answers.
constexpr char kGpuPresentLabel[] = "nvidia.com/gpu.present";

// The settings after GFD's own variables: flag, then environment, then default. The device
// plugin's config (its file, default config and MIG strategy) is read through
// plugin_config/sources.h.
struct Given {
  std::string output;
  bool oneshot = false;
  std::string machine_type_file;
  bool no_timestamp = false;
};

// GFD's boolean environment variables, read as NVIDIA's GFD reads them (Go's strconv.ParseBool,
// so GFD_ONESHOT=t counts): unset or empty leaves `*on` as it is; a word ParseBool refuses is an
// error naming the variable, as GFD's is.
absl::Status EnvBool(const char* name, bool* on) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return absl::OkStatus();
  absl::StatusOr<bool> parsed = plugin_config::ParseGoBool(value);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("environment variable ", name, ": ", parsed.status().message()));
  }
  *on = *parsed;
  return absl::OkStatus();
}

// A flag's value when given, else GFD's variable when set, else the default.
std::string FlagOrEnv(const std::optional<std::string>& flag, const char* name,
                      const char* fallback) {
  if (flag) return *flag;
  if (const char* env = std::getenv(name)) return env;
  return fallback;
}

absl::StatusOr<Given> ResolveGiven(const Options& options) {
  Given given;
  given.output = FlagOrEnv(options.output, "GFD_OUTPUT_FILE", kDefaultOutput);
  if (options.oneshot) {
    given.oneshot = *options.oneshot;
  } else {
    RETURN_IF_ERROR(EnvBool("GFD_ONESHOT", &given.oneshot));
  }
  if (options.no_timestamp) {
    given.no_timestamp = *options.no_timestamp;
  } else {
    RETURN_IF_ERROR(EnvBool("GFD_NO_TIMESTAMP", &given.no_timestamp));
  }
  given.machine_type_file =
      FlagOrEnv(options.machine_type_file, "GFD_MACHINE_TYPE_FILE", kDefaultMachineTypeFile);
  return given;
}

struct Settings {
  GfdOptions gfd;
  absl::Duration interval;
};

// The device plugin's config file or directory, and where it was named.
plugin_config::SettingText ConfigFileOf(const Options& options) {
  return plugin_config::FlagOrEnvironment("--config-file", options.config_file,
                                          &plugin_config::ProcessEnvironment,
                                          {"CONFIG_FILE", "GFD_CONFIG_FILE"})
      .value_or(plugin_config::SettingText{"", "--config-file"});
}

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::is_directory(path, ec);
}

// The directory that holds the config (a ConfigMap mounted whole, or a file's directory), watched
// before the config is first read so that no edit is missed: the labels then follow the config the
// device plugin follows. Nothing to watch without a config file.
std::optional<core::DirectoryWatch> WatchConfig(const std::string& config_file) {
  if (config_file.empty()) return std::nullopt;
  std::string dir = IsDirectory(config_file)
                        ? config_file
                        : std::filesystem::path(config_file).parent_path().string();
  if (dir.empty()) dir = ".";
  absl::StatusOr<core::DirectoryWatch> watch = core::DirectoryWatch::Open(dir);
  if (!watch.ok()) {
    spdlog::warn("config changes are not followed: {}; mount the config's directory",
                 watch.status().message());
    return std::nullopt;
  }
  spdlog::info("watching {} for config changes", dir);
  return std::move(*watch);
}

// Whether an event in the config's directory is about the labeller's own output (when --output
// is in that directory): its rename into place and the temporary directory beside it.
bool IsOwnOutput(const core::DirectoryEvent& event, const std::string& output) {
  std::string name = std::filesystem::path(output).filename().string();
  return !name.empty() &&
         (event.name == name || absl::StartsWith(event.name, absl::StrCat(".", name, ".tmp.")));
}

// `label`: the node's nvidia.com/device-plugin.config, which picks the config of a directory.
absl::StatusOr<Settings> ResolveSettings(const Options& options,
                                         const std::optional<std::string>& label) {
  Settings settings;

  auto [config_file, config_source] = ConfigFileOf(options);
  if (IsDirectory(config_file)) {
    // A ConfigMap mounted whole: the same config the device plugin picks.
    plugin_config::ConfigSelection selection;
    selection.label = label;
    selection.default_config =
        plugin_config::DefaultConfigName(std::nullopt, &plugin_config::ProcessEnvironment);
    absl::StatusOr<plugin_config::SelectedConfig> selected =
        plugin_config::SelectConfig(config_file, selection);
    if (!selected.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(config_source, ": ", selected.status().message()));
    }
    config_file = selected->path;
  }
  plugin_config::ConfigFile config;
  if (!config_file.empty()) {
    absl::StatusOr<plugin_config::ConfigFile> read = plugin_config::ReadConfigFile(config_file);
    if (!read.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(config_source, ": ", read.status().message()));
    }
    config = std::move(*read);
  }
  settings.gfd.sharing = SharingFrom(config);

  settings.gfd.mig_strategy = config.flags.mig_strategy.value_or(plugin_config::MigStrategy::kNone);
  std::optional<plugin_config::SettingText> strategy_text = plugin_config::FlagOrEnvironment(
      "--mig-strategy", options.mig_strategy, &plugin_config::ProcessEnvironment,
      {"MIG_STRATEGY", "GFD_MIG_STRATEGY"});
  if (strategy_text && !strategy_text->text.empty()) {
    absl::StatusOr<plugin_config::MigStrategy> strategy =
        plugin_config::ParseMigStrategy(strategy_text->text);
    if (!strategy.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(strategy_text->source, ": ", strategy.status().message()));
    }
    settings.gfd.mig_strategy = *strategy;
  }

  std::string interval_text = options.interval.value_or(kDefaultInterval),
              interval_source = "--interval";
  if (!options.interval) {
    if (const char* env = std::getenv("GFD_SLEEP_INTERVAL")) {
      interval_text = env;
      interval_source = "GFD_SLEEP_INTERVAL";
    }
  }
  ASSIGN_OR_RETURN(settings.interval,
                   core::ParseDuration(interval_source, interval_text, {.min = absl::Seconds(1)}));
  return settings;
}

// One pass's labels from NVML: GFD's, and the stable scheme when asked for.
absl::StatusOr<Labels> ComputeLabels(const nvml::Library& library, const core::HostRoot& host,
                                     const Options& options, const Given& given,
                                     const Settings& settings) {
  ASSIGN_OR_RETURN(NodeFacts facts, ReadNodeFacts(library));
  // The bus counts a card the driver did not take (a node with --sim has none of its own).
  AddPciBus(facts, host);
  GfdOptions gfd = settings.gfd;
  if (!given.machine_type_file.empty()) {
    if (absl::StatusOr<std::string> machine = host.ReadAttribute(given.machine_type_file);
        machine.ok()) {
      gfd.machine_type = *machine;
    } else {
      // Common on VMs; GFD then says "unknown" too.
      spdlog::info("gpu.machine: {}", machine.status().message());
    }
  }
  if (!given.no_timestamp) gfd.timestamp = static_cast<int64_t>(std::time(nullptr));
  Labels all = GfdLabels(facts, gfd);
  if (options.stable_labels) all.merge(StableLabels(facts, options.stable_label_prefix));
  return all;
}

// A failure of the API server to take the labels, as the exit code says it: a node that does not
// exist or a request the cluster forbids is the operator's to fix (2, as for the cluster
// commands); anything else is a failure (1).
absl::Status NodeWriteError(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      return core::AsInputError(status);
    default:
      return status;
  }
}

// The API server, reached as the node daemons reach it: KUBECONFIG, else the pod's service
// account.
absl::StatusOr<NodeLabelWriter> NodeWriter(const std::string& node, core::Env& env) {
  absl::StatusOr<kube::ClusterAccess> access = kube::ResolveAccess(kube::SourcesFromEnvironment());
  if (absl::IsNotFound(access.status())) {
    return core::AppendHint(access.status(),
                            "--write node runs in a pod with a service account (deploy/labels/), "
                            "or set KUBECONFIG");
  }
  if (!access.ok()) return access.status();
  absl::StatusOr<std::unique_ptr<kube::Client>> client =
      kube::NewNodeClient(*access, kube::TransportOptions{}, env);
  if (!client.ok()) return client.status();
  return NodeLabelWriter(std::move(*client), node);
}

}  // namespace

absl::Status Run(const Options& options, core::Env& env) {
  ASSIGN_OR_RETURN(Given given, ResolveGiven(options));
  if (given.output == "json" || given.output == "yaml" || given.output == "table") {
    // -o is GFD's features file here, never a format: refuse what would silently become ./json.
    return absl::InvalidArgumentError(
        "-o/--output " + given.output +
        ": labels writes GFD's key=value lines to the features file -o names, and \"" +
        given.output + "\" is a format, not a file; give a path, or - for stdout");
  }
  if (absl::Status st = CheckLabelKeyPrefix(options.stable_label_prefix); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--stable-label-prefix ", st.message()));
  }
  if (given.oneshot && options.interval) {
    return absl::InvalidArgumentError(
        "--oneshot and --interval exclude each other; give one of them");
  }
  if (options.write != "file" && options.write != "node") {
    return absl::InvalidArgumentError(
        absl::StrCat("--write ", options.write,
                     ": give file (NFD's features.d, the default) or node (the node's own labels "
                     "through the API server)"));
  }
  const bool to_node = options.write == "node";
  std::optional<NodeLabelWriter> writer;
  if (to_node) {
    if (options.output) {
      return absl::InvalidArgumentError(
          "-o/--output names the features file of --write file, and --write node writes the "
          "node's labels through the API server; give one of them");
    }
    if (options.node_name.empty()) {
      return absl::InvalidArgumentError(
          "--write node: no node; set --node-name (or NODE_NAME) from the pod's spec.nodeName");
    }
    ASSIGN_OR_RETURN(writer, NodeWriter(options.node_name, env));
  }
  std::optional<plugin_config::ConfigLabelSource> label;
  if (IsDirectory(ConfigFileOf(options).text)) {
    label = plugin_config::ConfigLabelSource::Follow("gpunode-labels", env);
  }
  auto label_value = [&] { return label ? label->watch().Value() : std::nullopt; };
  std::optional<core::DirectoryWatch> config_watch;
  if (!given.oneshot) config_watch = WatchConfig(ConfigFileOf(options).text);
  absl::StatusOr<Settings> settings = ResolveSettings(options, label_value());
  if (!settings.ok() && label_value()) {
    // As the device plugin: a label naming a missing or broken config does not stop the labeller.
    spdlog::error("{}; labelling with the default config instead", settings.status().message());
    label->Refused(std::string(settings.status().message()),
                   "labelling with the default config instead");
    settings = ResolveSettings(options, std::nullopt);
  }
  if (!settings.ok()) return settings.status();
  bool to_stdout = !to_node && (given.output.empty() || given.output == "-");
  std::string target = to_node ? "node " + options.node_name : to_stdout ? "stdout" : given.output;
  spdlog::info(
      "labels: writing to {} {}; config {}; MIG strategy {}; stable labels {}{}; timestamp {}",
      target, given.oneshot ? "once" : "every " + absl::FormatDuration(settings->interval),
      ConfigFileOf(options).text.empty() ? "none" : ConfigFileOf(options).text,
      plugin_config::Name(settings->gfd.mig_strategy), options.stable_labels ? "on" : "off",
      options.stable_label_prefix.empty() ? "" : " under " + options.stable_label_prefix,
      given.no_timestamp ? "off" : "on");

  absl::StatusOr<std::unique_ptr<nvml::Library>> library = options.open_nvml(options.driver_root);
  // A node without NVIDIA's driver (the labels DaemonSet of --write node runs on every node) says
  // so in its labels and waits for the driver, rather than failing in a loop. A simulator that
  // does not load is a bad --sim.
  if (!library.ok() && (!to_node || options.simulated)) return library.status();
  if (!library.ok()) {
    spdlog::warn("no GPU labels: {}; labelling the node {}=false until NVML answers",
                 library.status().message(), kGpuPresentLabel);
  }
  const core::HostRoot& host = env.host();

  // By a change of the config label or of the config file, logged once the file is written.
  std::string relabelled;
  // What the last pass wrote, but its time: tells a relabel from a wake-up that found the config
  // as it was (a ConfigMap volume is updated in steps, and the first may wake the labeller before
  // the new version is in place; the last step wakes it again).
  Labels previous;
  for (bool first = true;; first = false) {
    if (!library.ok() && !first) {
      library = options.open_nvml(options.driver_root);
      if (library.ok()) spdlog::info("NVML answers now: labelling the node's GPUs");
    }
    absl::StatusOr<Labels> computed =
        library.ok() ? ComputeLabels(**library, host, options, given, *settings) : Labels{};
    if (!computed.ok() && (!to_node || given.oneshot)) return computed.status();
    if (!computed.ok()) {
      // A GPU node whose NVML fails once keeps its labels rather than losing its device plugin.
      spdlog::error("{}; the node's labels stay as they are", computed.status().message());
    } else if (to_node) {
      computed->emplace(kGpuPresentLabel, "false");  // when no GPU answers
      // The timestamp alone does not rewrite the Node: it says when the labels last changed.
      absl::StatusOr<NodeLabelWriter::Written> written =
          writer->Write(*computed, {kTimestampLabel});
      if (!written.ok()) {
        // A node that does not exist or a request the cluster forbids is refused at once; a
        // later failure (the API server away) is retried next time.
        if (first || given.oneshot) return NodeWriteError(written.status());
        spdlog::error("{}", written.status().message());
      } else if (written->patched) {
        spdlog::info("node {}: {} label(s) set, {} removed", options.node_name, written->set,
                     written->removed);
      } else {
        spdlog::debug("node {}: labels unchanged", options.node_name);
      }
    } else {
      std::string text = FormatLabels(*computed);
      if (to_stdout) {
        std::cout << text << std::flush;
      } else if (absl::Status st = WriteLabelFile(given.output, text); !st.ok()) {
        // A bad --output is an input error; a later failure (a full disk) is retried next time.
        if (first || given.oneshot) return st;
        spdlog::error("{}", st.message());
      }
    }
    if (given.oneshot) return absl::OkStatus();
    if (first && !to_stdout) {
      spdlog::info("labels written to {}; again every {}", target,
                   absl::FormatDuration(settings->interval));
    }
    Labels all = computed.ok() ? std::move(*computed) : previous;
    all.erase(kTimestampLabel);
    if (!relabelled.empty()) {
      if (all != previous) {
        spdlog::info("{}: relabelled with the config it selects", relabelled);
      } else {
        spdlog::debug("{}: the config it selects gives the same labels", relabelled);
      }
      relabelled.clear();
    }
    previous = std::move(all);

    // Until the interval has passed, a stop, a new config label or a config edit (relabel at
    // once).
    struct pollfd fds[3] = {{env.stop_fd(), POLLIN, 0},
                            {label ? label->watch().fd() : -1, POLLIN, 0},
                            {config_watch ? config_watch->fd() : -1, POLLIN, 0}};
    int ms = static_cast<int>(absl::ToInt64Milliseconds(settings->interval));
    if (poll(fds, 3, ms) < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
    }
    if (fds[0].revents != 0) {
      // Like GFD: labels of a labeller that stopped must not outlive it. On the node they stay:
      // a rollout of the labeller must not take the device plugin off the node.
      if (!to_stdout && !to_node) std::remove(given.output.c_str());
      return absl::OkStatus();
    }
    std::string what;
    if (fds[1].revents != 0) {
      label->watch().Clear();
      what = absl::StrCat("node label ", plugin_config::kConfigLabel, " changed");
    }
    if (fds[2].revents != 0) {
      bool changed = false, gone = false;
      for (const core::DirectoryEvent& event : config_watch->Read()) {
        gone |= event.directory_gone;
        changed |= !IsOwnOutput(event, given.output);
      }
      // Watched again before the config is read, as at the start.
      if (gone) config_watch = WatchConfig(ConfigFileOf(options).text);
      if ((changed || gone) && what.empty()) what = "config changed";
    }
    if (!what.empty()) {
      absl::StatusOr<Settings> changed = ResolveSettings(options, label_value());
      if (changed.ok()) {
        relabelled = what;
        settings = std::move(changed);
      } else {
        spdlog::error("{} but is not applied, keeping the labels of the running config: {}", what,
                      changed.status().message());
        if (label) {
          label->Refused(std::string(changed.status().message()),
                         "the labels of the running config stay");
        }
      }
    }
  }
}

}  // namespace gpunode::labels
