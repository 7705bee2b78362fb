#include "plugin/daemon/plugin_daemon.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/status_macros.h"
#include "nvml/system.h"
#include "plugin/cdi/cdi_spec.h"
#include "plugin/mps/mps_plan_key.h"
#include "plugin/mps/mps_readiness.h"
#include "plugin/rm/resources.h"
#include "plugin/server/registration.h"
#include "plugin_config/config_dir.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {

using plugin_config::Config;
using plugin_config::ConfigJson;
using plugin_config::DeviceListStrategy;
using plugin_config::kConfigLabel;
using plugin_config::ResolvedConfig;

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kFirstRetry{100};
constexpr std::chrono::milliseconds kMaxRetry{5000};

bool IsSocket(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

std::optional<std::chrono::system_clock::time_point> ChangeTime(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return std::nullopt;
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_ctim.tv_sec) + std::chrono::nanoseconds(st.st_ctim.tv_nsec)));
}

std::string BaseName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

}  // namespace

struct PluginDaemon::Generation {
  std::shared_ptr<PluginState> state;
  std::unique_ptr<health::HealthBoard> board;
  std::unique_ptr<health::HealthMonitor> monitor;
  std::vector<std::unique_ptr<PluginServer>> servers;
  // When each server's last successful Register started (wall clock, to compare with the
  // kubelet socket's ctime); unset while it needs registering.
  std::vector<std::optional<std::chrono::system_clock::time_point>> registered;

  ~Generation() {
    // Streams and servers use the board and the node; the monitor writes the board.
    servers.clear();
    monitor.reset();
    state.reset();  // stops the MPS readiness checks, which write the board
  }
};

PluginDaemon::PluginDaemon(const nvml::Library* library, DaemonOptions options, ConfigLoader loader,
                           core::SignalFd signals, core::Env& env)
    : library_(library),
      options_(std::move(options)),
      loader_(std::move(loader)),
      signals_(std::move(signals)),
      env_(env) {}

PluginDaemon::~PluginDaemon() { StopGeneration(); }

absl::StatusOr<std::unique_ptr<PluginDaemon::Generation>> PluginDaemon::StartGeneration(
    const ResolvedConfig& resolved) {
  const Config& config = resolved.config;
  if (!resolved.config_name.empty()) {
    spdlog::info("config {} from {} ({})", resolved.config_name, resolved.config_file,
                 resolved.selected_by);
  }
  spdlog::info("Running with config: {}", ConfigJson(config));
  for (const std::string& warning : resolved.warnings) spdlog::warn("config: {}", warning);

  auto generation = std::make_unique<Generation>();
  auto state = std::make_shared<PluginState>();
  state->config = config;
  if (library_ != nullptr) {
    const core::HostRoot& host = env_.host();
    absl::StatusOr<Node> node = ReadNode(*library_, host);
    if (!node.ok()) {
      if (config.fail_on_init_error) return node.status();
      spdlog::error("cannot read the GPUs: {}; offering nothing (failOnInitError is false)",
                    node.status().message());
    } else {
      state->node = std::move(*node);
    }
  }
  std::vector<std::string> warnings;
  absl::StatusOr<std::vector<Resource>> resources = BuildResources(state->node, config, &warnings);
  if (!resources.ok()) return resources.status();
  for (const std::string& warning : warnings) spdlog::warn("{}", warning);
  state->host = ReadHostDevices(env_.host(), config.dev_root());

  if (config.Uses(DeviceListStrategy::kCdiAnnotations) ||
      config.Uses(DeviceListStrategy::kCdiCri)) {
    if (absl::Status st = WriteNodeCdiSpec(config, state->node); !st.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("a CDI device list strategy needs the CDI spec: ", st.message()));
    }
  }

  generation->board = std::make_unique<health::HealthBoard>();
  std::map<std::string, std::string> mps_plans;
  for (const Resource& resource : *resources) {
    if (resource.mps) mps_plans[resource.name] = MpsPlanKey(resource, state->node);
  }
  if (!mps_plans.empty()) {
    std::string root = env_.host().Resolve(config.mps_root);
    state->mps = std::make_shared<MpsReadiness>(root, std::move(mps_plans), *generation->board);
  }
  generation->state = state;
  if (library_ != nullptr && options_.health.xids.enabled && !state->node.gpus.empty()) {
    generation->monitor = health::HealthMonitor::Start(*library_, MonitoredGpus(state->node),
                                                       *generation->board, options_.health);
  } else if (!options_.health.xids.enabled) {
    spdlog::warn("health checks are disabled (DP_DISABLE_HEALTHCHECKS)");
  }
  for (Resource& resource : *resources) {
    std::string socket = absl::StrCat(options_.kubelet_dir, "/", resource.socket_name);
    auto handler = std::make_shared<RequestHandler>(std::move(resource), state, *generation->board);
    auto server = std::make_unique<PluginServer>(handler, *generation->board, socket);
    if (absl::Status st = server->Start(); !st.ok()) return st;
    spdlog::info("{}: {} devices", handler->resource().name, handler->resource().devices.size());
    generation->servers.push_back(std::move(server));
  }
  generation->registered.assign(generation->servers.size(), std::nullopt);
  if (generation->servers.empty()) spdlog::warn("No devices found. Waiting indefinitely.");
  return generation;
}

// One spec per node, built at every start of a generation (the plugin's start, a config change,
// the kubelet's restart) from the driver NVML reports now, and rewritten only when it changed: a
// new driver brings new library versions, so its first generation rewrites the file.
absl::Status PluginDaemon::WriteNodeCdiSpec(const Config& config, const Node& node) {
  if (library_ == nullptr) return absl::FailedPreconditionError("NVML is not loaded");
  absl::StatusOr<std::string> version = nvml::DriverVersion(*library_);
  if (!version.ok()) return version.status();
  CdiOptions cdi{.driver_root = config.nvidia_driver_root,
                 .dev_root = config.dev_root(),
                 .hook_path = options_.cdi_hooks_disabled ? "" : config.nvidia_cdi_hook_path};
  absl::StatusOr<NodeCdiSpec> spec = BuildNodeCdiSpec(node, *version, env_.host(), cdi);
  if (!spec.ok()) return spec.status();
  for (const std::string& warning : spec->warnings) spdlog::warn("CDI spec: {}", warning);
  for (const std::string& missing : spec->left_out)
    spdlog::info("CDI spec: not in it: {}", missing);
  absl::StatusOr<bool> written = WriteCdiSpec(options_.cdi_spec_dir, spec->spec, cdi.kind);
  if (!written.ok()) {
    return absl::Status(
        written.status().code(),
        absl::StrCat(written.status().message(), "; mount /var/run/cdi or set --cdi-spec-dir"));
  }
  spdlog::info("CDI spec {}/{} for driver {}: {}", options_.cdi_spec_dir, CdiSpecFileName(cdi.kind),
               *version, *written ? "written" : "unchanged");
  return absl::OkStatus();
}

void PluginDaemon::StopGeneration() { generation_.reset(); }

void PluginDaemon::RemoveStaleSockets() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.kubelet_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, "nvidia-") && absl::EndsWith(name, ".sock") &&
        IsSocket(entry.path().string())) {
      spdlog::info("removing the stale socket {}", entry.path().string());
      unlink(entry.path().c_str());
    }
  }
}

void PluginDaemon::RestartServer(size_t i, const char* why) {
  PluginServer& server = *generation_->servers[i];
  spdlog::warn("{}: {}; serving {} again", server.handler().resource().name, why,
               server.socket_path());
  if (absl::Status st = server.Start(); !st.ok()) spdlog::error("{}", st.message());
  generation_->registered[i].reset();
}

void PluginDaemon::TryRegister() {
  next_register_.reset();
  if (!generation_ || options_.kubelet_socket.empty()) return;
  bool pending = false;
  for (size_t i = 0; i < generation_->servers.size(); ++i) {
    if (generation_->registered[i]) continue;
    pending = true;
    if (!IsSocket(options_.kubelet_socket)) {
      // The kubelet is not up: wait for its socket (a new one is an inotify event).
      if (!waiting_for_kubelet_) {
        spdlog::info(
            "waiting for the kubelet at {}: no socket there yet (or not a socket); registering "
            "as soon as it appears",
            options_.kubelet_socket);
      }
      waiting_for_kubelet_ = true;
      break;
    }
    waiting_for_kubelet_ = false;
    const PluginServer& server = *generation_->servers[i];
    const std::string& resource = server.handler().resource().name;
    spdlog::info("registering {} with the kubelet at {}", resource, options_.kubelet_socket);
    auto started = absl::ToChronoTime(env_.Now());
    absl::Status st = RegisterWithKubelet(options_.kubelet_socket, BaseName(server.socket_path()),
                                          resource, options_.register_timeout);
    if (st.ok()) {
      generation_->registered[i] = started;
      spdlog::info("Registered device plugin for '{}' with Kubelet", resource);
    } else {
      spdlog::warn("{}", st.message());
    }
  }
  bool all = std::all_of(generation_->registered.begin(), generation_->registered.end(),
                         [](const auto& r) { return r.has_value(); });
  if (!pending || all) {
    backoff_ = std::chrono::milliseconds(0);
    return;
  }
  // Retry with backoff; a new kubelet.sock also triggers an attempt at once.
  backoff_ = backoff_.count() == 0 ? kFirstRetry : std::min(backoff_ * 2, kMaxRetry);
  next_register_ = Clock::now() + backoff_;
}

void PluginDaemon::HandleDirectoryEvents() {
  bool kubelet_restarted = false;
  bool rewatch = false;
  bool overflow = false;
  std::vector<bool> deleted(generation_ ? generation_->servers.size() : 0, false);
  std::string kubelet_name = BaseName(options_.kubelet_socket);
  for (const core::DirectoryEvent& event : watch_->Read()) {
    if (event.directory_gone) rewatch = true;
    if (event.overflow) overflow = true;
    if (event.created && !kubelet_name.empty() && event.name == kubelet_name)
      kubelet_restarted = true;
    if (event.deleted) {
      for (size_t i = 0; i < deleted.size(); ++i) {
        if (BaseName(generation_->servers[i]->socket_path()) == event.name) deleted[i] = true;
      }
    }
  }
  if (rewatch) {
    spdlog::warn("{} was removed or moved; watching it again once it is back",
                 options_.kubelet_dir);
    watch_.reset();
    rewatch_backoff_ = std::chrono::milliseconds(0);
    Rewatch();
    return;  // Rewatch rescans once the directory is watched again
  }
  if (overflow) {
    Rescan("the inotify queue overflowed");
    return;
  }
  if (!generation_) return;
  for (size_t i = 0; i < deleted.size(); ++i) {
    // Our own restarts delete and recreate the file; only a socket that is gone needs work.
    if (deleted[i] && !generation_->servers[i]->SocketExists())
      RestartServer(i, "the socket was deleted");
  }
  if (kubelet_restarted) {
    spdlog::warn("{} was created: the kubelet restarted; registering again",
                 options_.kubelet_socket);
    // A registration that started after this kubelet.sock was made reached the new kubelet
    // (the deletions and the creation can arrive in separate reads); the others are redone.
    std::optional<std::chrono::system_clock::time_point> born = ChangeTime(options_.kubelet_socket);
    for (size_t i = 0; i < generation_->servers.size(); ++i) {
      if (!generation_->servers[i]->SocketExists()) {
        RestartServer(i, "the kubelet removed the socket");
      }
      std::optional<std::chrono::system_clock::time_point>& at = generation_->registered[i];
      if (at && born && *at > *born) continue;
      at.reset();
    }
    backoff_ = std::chrono::milliseconds(0);
    // The kubelet empties its directory when it starts: write the health state there again.
    if (generation_->monitor) generation_->monitor->Republish();
  }
  if (kubelet_restarted || std::find(deleted.begin(), deleted.end(), true) != deleted.end())
    TryRegister();
}

void PluginDaemon::Rewatch() {
  next_rewatch_.reset();
  absl::StatusOr<core::DirectoryWatch> watch = core::DirectoryWatch::Open(options_.kubelet_dir);
  if (!watch.ok()) {
    rewatch_backoff_ =
        rewatch_backoff_.count() == 0 ? kFirstRetry : std::min(rewatch_backoff_ * 2, kMaxRetry);
    spdlog::warn(
        "{}; mount the kubelet's device-plugins directory (--kubelet-dir); retrying in {} ms",
        watch.status().message(), rewatch_backoff_.count());
    next_rewatch_ = Clock::now() + rewatch_backoff_;
    return;
  }
  watch_ = std::move(*watch);
  rewatch_backoff_ = std::chrono::milliseconds(0);
  Rescan("the directory is back");
}

void PluginDaemon::Rescan(const char* why) {
  spdlog::warn("{}: {}; looking at it again", options_.kubelet_dir, why);
  if (!generation_) return;
  std::optional<std::chrono::system_clock::time_point> born = ChangeTime(options_.kubelet_socket);
  for (size_t i = 0; i < generation_->servers.size(); ++i) {
    if (!generation_->servers[i]->SocketExists()) RestartServer(i, "the socket is gone");
    std::optional<std::chrono::system_clock::time_point>& at = generation_->registered[i];
    if (at && born && *at < *born) at.reset();  // a kubelet that started since
  }
  if (generation_->monitor) generation_->monitor->Republish();
  backoff_ = std::chrono::milliseconds(0);
  TryRegister();
}

void PluginDaemon::Reload() {
  absl::StatusOr<ResolvedConfig> config = loader_();
  if (!config.ok()) {
    spdlog::error("SIGHUP: not reloaded, keeping the running configuration: {}",
                  config.status().message());
    return;
  }
  spdlog::warn("SIGHUP: reloading the configuration and restarting the plugins");
  Apply(std::move(*config), "SIGHUP");
}

void PluginDaemon::ConfigChanged(const std::string& what) {
  absl::StatusOr<ResolvedConfig> config = loader_();
  if (!config.ok()) {
    spdlog::error("{} but is not applied, keeping the running configuration: {}", what,
                  config.status().message());
    if (options_.config.refused) options_.config.refused(std::string(config.status().message()));
    return;
  }
  if (config->config_file == running_config_.config_file &&
      ConfigJson(config->config) == ConfigJson(running_config_.config)) {
    return;
  }
  spdlog::warn("{} ({}{}): restarting the plugins with it", what, config->config_file,
               config->selected_by.empty() ? "" : ", " + config->selected_by);
  Apply(std::move(*config), what.c_str());
}

void PluginDaemon::Apply(ResolvedConfig config, const char* why) {
  StopGeneration();
  absl::StatusOr<std::unique_ptr<Generation>> generation = StartGeneration(config);
  if (generation.ok()) {
    generation_ = std::move(*generation);
    running_config_ = std::move(config);
  } else {
    spdlog::error("{}: the new configuration does not start ({}); going back to the running one",
                  why, generation.status().message());
    generation = StartGeneration(running_config_);
    if (generation.ok()) {
      generation_ = std::move(*generation);
    } else {
      spdlog::error("the running configuration does not start again either: {}",
                    generation.status().message());
    }
  }
  backoff_ = std::chrono::milliseconds(0);
  TryRegister();
}

int PluginDaemon::PollTimeoutMs() const {
  std::optional<Clock::time_point> next = next_register_;
  if (next_rewatch_ && (!next || *next_rewatch_ < *next)) next = next_rewatch_;
  if (!next) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*next - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

absl::StatusOr<bool> PluginDaemon::WaitForKubeletDir(plugin_config::ResolvedConfig& config) {
  std::chrono::milliseconds backoff{0};
  while (true) {
    absl::StatusOr<core::DirectoryWatch> watch = core::DirectoryWatch::Open(options_.kubelet_dir);
    if (watch.ok()) {
      watch_ = std::move(*watch);
      if (backoff.count() != 0)
        spdlog::info("{} is there: starting the plugins", options_.kubelet_dir);
      return true;
    }
    if (backoff.count() == 0) {
      spdlog::info(
          "waiting for the kubelet's device-plugins directory: {}; mount it (--kubelet-dir)",
          watch.status().message());
    }
    backoff = backoff.count() == 0 ? kFirstRetry : std::min(backoff * 2, kMaxRetry);
    struct pollfd fd = {signals_.fd(), POLLIN, 0};
    if (poll(&fd, 1, static_cast<int>(backoff.count())) < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
    }
    while (std::optional<int> signal = signals_.Read()) {
      if (*signal != SIGHUP) {
        spdlog::warn("received signal {} while waiting for {}; stopping", *signal,
                     options_.kubelet_dir);
        env_.RequestStop(*signal);
        return false;
      }
      absl::StatusOr<ResolvedConfig> reloaded = loader_();
      if (reloaded.ok()) {
        config = std::move(*reloaded);
      } else {
        spdlog::error("SIGHUP: not reloaded, keeping the configuration read at start: {}",
                      reloaded.status().message());
      }
    }
  }
}

void PluginDaemon::WatchConfig() { config_watch_ = WatchConfigDir(options_.config.watch_dir); }

ResolvedConfig PluginDaemon::ReadAgainAfterWatching(const ResolvedConfig& read_at_start) {
  if (!config_watch_) return read_at_start;
  absl::StatusOr<ResolvedConfig> now = loader_();
  if (!now.ok()) {
    spdlog::error(
        "config changed before it was watched but is not applied, keeping the "
        "configuration read at start: {}",
        now.status().message());
    if (options_.config.refused) options_.config.refused(std::string(now.status().message()));
    return read_at_start;
  }
  if (now->config_file == read_at_start.config_file &&
      ConfigJson(now->config) == ConfigJson(read_at_start.config)) {
    return read_at_start;
  }
  spdlog::warn("config changed before it was watched ({}): starting with the new one",
               now->config_file);
  return *std::move(now);
}

absl::Status PluginDaemon::Run(const ResolvedConfig& start_config) {
  // The watch opens before the config is looked at again: a version published between the
  // caller's read and this point raised no event on a watch that did not exist, so it is read
  // once more now; one published later is an event like any other (issue: a ConfigMap update
  // that lands while the DaemonSet's new pod starts).
  WatchConfig();
  plugin_config::ResolvedConfig config = ReadAgainAfterWatching(start_config);
  ASSIGN_OR_RETURN(bool directory_there, WaitForKubeletDir(config));
  if (!directory_there) return absl::OkStatus();
  RemoveStaleSockets();
  absl::StatusOr<std::unique_ptr<Generation>> generation = StartGeneration(config);
  if (!generation.ok()) return generation.status();
  generation_ = std::move(*generation);
  running_config_ = config;
  TryRegister();

  while (true) {
    // A negative fd (no watch while the directory is gone) is skipped by poll.
    struct pollfd fds[4] = {{signals_.fd(), POLLIN, 0},
                            {watch_ ? watch_->fd() : -1, POLLIN, 0},
                            {config_watch_ ? config_watch_->fd() : -1, POLLIN, 0},
                            {options_.config.label_fd, POLLIN, 0}};
    int ready = poll(fds, 4, PollTimeoutMs());
    if (ready < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
    }
    while (std::optional<int> signal = signals_.Read()) {
      if (*signal == SIGHUP) {
        Reload();
      } else {
        spdlog::warn("received signal {}; removing our sockets and stopping", *signal);
        env_.RequestStop(*signal);
        StopGeneration();
        return absl::OkStatus();
      }
    }
    if (watch_ && fds[1].revents != 0) HandleDirectoryEvents();
    if (fds[2].revents != 0) {
      bool gone = false;
      for (const core::DirectoryEvent& event : config_watch_->Read()) gone |= event.directory_gone;
      // Watched again before the config is read, as at the start.
      if (gone) {
        config_watch_.reset();
        WatchConfig();
      }
      ConfigChanged("config changed");
    }
    if (fds[3].revents != 0) {
      if (options_.config.clear_label) options_.config.clear_label();
      ConfigChanged("node label " + std::string(kConfigLabel) + " changed");
    }
    if (next_rewatch_ && Clock::now() >= *next_rewatch_) Rewatch();
    if (next_register_ && Clock::now() >= *next_register_) TryRegister();
  }
}

}  // namespace gpunode::plugin
