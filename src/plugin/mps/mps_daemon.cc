#include "plugin/mps/mps_daemon.h"

#include <poll.h>

#include <csignal>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/log.h"
#include "plugin_config/config_dir.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {
namespace {

std::string Describe(const std::vector<MpsPlan>& plans) {
  if (plans.empty()) return "no resource shared through MPS";
  std::vector<std::string> keys;
  for (const MpsPlan& plan : plans) keys.push_back(plan.key);
  return absl::StrJoin(keys, "; ");
}

}  // namespace

MpsDaemon::MpsDaemon(const nvml::Library& library, Node node, MpsDaemonOptions options,
                     ConfigLoader loader, core::SignalFd signals, core::Env& env)
    : library_(library),
      node_(std::move(node)),
      options_(std::move(options)),
      loader_(std::move(loader)),
      signals_(std::move(signals)),
      env_(env) {}

MpsDaemon::~MpsDaemon() { StopPlans(); }

absl::Status MpsDaemon::Run(plugin_config::ResolvedConfig config) {
  if (absl::Status st = AdoptDaemons(); !st.ok()) return st;
  // Watched before the config is read once more, so that a change made while this started is
  // either in what is read now or wakes the loop.
  config_watch_ = WatchConfigDir(options_.config.watch_dir);
  if (config_watch_) {
    absl::StatusOr<plugin_config::ResolvedConfig> now = loader_();
    if (now.ok()) config = std::move(*now);
  }
  absl::StatusOr<std::vector<MpsPlan>> plans = PlanMps(library_, config.config, node_);
  if (!plans.ok()) return plans.status();
  if (plans->empty()) {
    spdlog::warn(
        "no resource is shared through MPS (sharing.mps); waiting for a config that "
        "shares one");
  } else if (!options_.binary.ok()) {
    return options_.binary.status();
  }
  spdlog::info("MPS control daemon {} for {} resource(s)", options_.binary.value_or("(none)"),
               plans->size());
  if (absl::Status st = StartPlans(std::move(*plans)); !st.ok()) return st;

  while (true) {
    pollfd fds[3] = {{signals_.fd(), POLLIN, 0},
                     {config_watch_ ? config_watch_->fd() : -1, POLLIN, 0},
                     {options_.config.label_fd, POLLIN, 0}};
    int ready = poll(fds, 3, static_cast<int>(options_.check_period.count()));
    if (ready > 0 && fds[0].revents != 0) {
      while (std::optional<int> signal = signals_.Read()) {
        if (*signal == SIGHUP) {
          ConfigChanged("SIGHUP");
          continue;
        }
        spdlog::warn("received signal {}; quitting the MPS control daemons", *signal);
        env_.RequestStop(*signal);
        StopPlans();
        return absl::OkStatus();
      }
    }
    if (ready > 0 && config_watch_ && fds[1].revents != 0) {
      bool gone = false;
      for (const core::DirectoryEvent& event : config_watch_->Read()) gone |= event.directory_gone;
      if (gone) config_watch_ = WatchConfigDir(options_.config.watch_dir);
      ConfigChanged("config changed");
    }
    if (ready > 0 && fds[2].revents != 0) {
      if (options_.config.clear_label) options_.config.clear_label();
      ConfigChanged(absl::StrCat("node label ", plugin_config::kConfigLabel, " changed"));
    }
    ReapChildren();
    if (supervisor_) supervisor_->Check();
  }
}

void MpsDaemon::Refuse(const std::string& why) {
  spdlog::error("{}; the running MPS control daemons stay: {}", why, Describe(running_));
  if (options_.config.refused) options_.config.refused(why);
}

void MpsDaemon::ConfigChanged(const std::string& why) {
  absl::StatusOr<plugin_config::ResolvedConfig> config = loader_();
  if (!config.ok()) {
    return Refuse(absl::StrCat(why, " but is not applied: ", config.status().message()));
  }
  absl::StatusOr<std::vector<MpsPlan>> plans = PlanMps(library_, config->config, node_);
  if (!plans.ok()) {
    return Refuse(absl::StrCat(why, " but is not applied: ", plans.status().message()));
  }
  if (*plans == running_) return;
  if (!plans->empty() && !options_.binary.ok()) {
    return Refuse(absl::StrCat(why, " but is not applied: ", options_.binary.status().message()));
  }
  spdlog::warn("{} ({}{}): the MPS plan is now {}; restarting the control daemons", why,
               config->config_file, config->selected_by.empty() ? "" : ", " + config->selected_by,
               Describe(*plans));
  std::vector<MpsPlan> previous = running_;
  StopPlans();
  if (absl::Status st = StartPlans(std::move(*plans)); !st.ok()) {
    std::string refused = absl::StrCat(why, " but its plan did not start: ", st.message());
    spdlog::error("{}; starting the previous plan again: {}", refused, Describe(previous));
    if (options_.config.refused) options_.config.refused(refused);
    if (absl::Status again = StartPlans(std::move(previous)); !again.ok()) {
      spdlog::error("the previous MPS plan did not start again either: {}", again.message());
    }
  }
}

absl::Status MpsDaemon::StartPlans(std::vector<MpsPlan> plans) {
  if (plans.empty()) return absl::OkStatus();
  auto supervisor = std::make_unique<MpsSupervisor>(library_, *options_.binary, plans, env_);
  if (absl::Status st = supervisor->Start(); !st.ok()) return st;
  supervisor_ = std::move(supervisor);
  running_ = std::move(plans);
  spdlog::info("MPS control daemons ready: {}", Describe(running_));
  return absl::OkStatus();
}

void MpsDaemon::StopPlans() {
  if (supervisor_) supervisor_->Stop();
  supervisor_.reset();
  running_.clear();
}

}  // namespace gpunode::plugin
