#include "plugin/mps/mps_readiness.h"

#include <sys/socket.h>
#include <unistd.h>

#include "core/file_io.h"
#include "core/log.h"
#include "core/unix_socket.h"
#include "host/mps_paths.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {
namespace {

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// How often the control socket itself is tried while the markers say the daemon is up: each
// try costs two lines in the daemon's control.log ("User did not send valid credentials").
constexpr absl::Duration kSocketRecheck = absl::Seconds(10);

}  // namespace

bool MpsControlAccepts(const std::string& socket_path) {
  // The daemon's control socket is a SEQPACKET socket; a stream connect is refused (EPROTOTYPE).
  return core::UnixSocketAccepts(socket_path, SOCK_SEQPACKET);
}

namespace {

const char* Name(MpsState state) {
  switch (state) {
    case MpsState::kUp:
      return "up";
    case MpsState::kDown:
      return "down";
    case MpsState::kNotReady:
      break;
  }
  return "not ready";
}

}  // namespace

std::string MpsRunningPlan(const std::string& root, const std::string& resource) {
  absl::StatusOr<std::string> marker =
      core::ReadFile(host::MpsPaths{root, resource}.StartedMarker());
  if (!marker.ok()) return "";
  return marker->substr(0, marker->find('\n'));
}

bool MpsMarkersPresent(const std::string& root, const std::string& resource,
                       const std::string& plan) {
  return Exists(host::MpsReadyMarker(root)) && MpsRunningPlan(root, resource) == plan;
}

MpsReadiness::MpsReadiness(std::string root, std::map<std::string, std::string> plans,
                           health::HealthBoard& board, std::chrono::milliseconds period)
    : root_(std::move(root)), board_(board), period_(period), plans_(std::move(plans)) {
  for (const auto& [resource, plan] : plans_) states_[resource] = MpsState::kNotReady;
  Probe();
  thread_ = std::thread([this] { Loop(); });
}

MpsReadiness::~MpsReadiness() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  thread_.join();
}

MpsState MpsReadiness::state(const std::string& resource) const {
  std::lock_guard lock(mutex_);
  auto it = states_.find(resource);
  return it == states_.end() ? MpsState::kNotReady : it->second;
}

void MpsReadiness::Probe() {
  bool changed = false;
  std::vector<std::string> names;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [name, state] : states_) names.push_back(name);
  }
  for (const std::string& name : names) {
    // The markers every period; the socket when they appear and every kSocketRecheck after.
    const std::string& plan = plans_.at(name);
    bool up = MpsMarkersPresent(root_, name, plan);
    if (std::string running = MpsRunningPlan(root_, name); !running.empty() && running != plan) {
      if (other_plan_said_.insert(name).second) {
        spdlog::warn(
            "MPS control daemon of {} runs another plan ({}) than this config's ({}): waiting "
            "for it to follow the config",
            name, running, plan);
      }
    } else {
      other_plan_said_.erase(name);
    }
    if (up && (state(name) != MpsState::kUp || socket_recheck_[name].Passed())) {
      up = MpsControlAccepts(host::MpsPaths{root_, name}.ControlSocket());
      socket_recheck_[name] = core::IoDeadline::After(kSocketRecheck);
    }
    std::lock_guard lock(mutex_);
    MpsState& state = states_[name];
    MpsState next = up ? MpsState::kUp : (state == MpsState::kNotReady ? state : MpsState::kDown);
    if (next == state) continue;
    if (next == MpsState::kUp) {
      spdlog::info("MPS control daemon of {} is up ({}/{}): offering its replicas", name, root_,
                   name);
    } else {
      spdlog::warn("MPS control daemon of {} is {} ({}/{}): its replicas are Unhealthy", name,
                   Name(next), root_, name);
    }
    state = next;
    changed = true;
  }
  if (changed) board_.MarkChanged();
}

void MpsReadiness::Loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    stop_.wait_for(lock, period_, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    Probe();
    lock.lock();
  }
}

}  // namespace gpunode::plugin
