#include "plugin/health/health_monitor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "nvml/status.h"
#include "nvml/system.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {
namespace {

// Bounds how long Stop() waits for an NVML wait to return.
constexpr std::chrono::milliseconds kWaitSlice{200};

std::string Seconds(std::chrono::milliseconds period) {
  return absl::StrCat(period.count() / 1000.0, "s");
}

}  // namespace

std::unique_ptr<HealthMonitor> HealthMonitor::Start(const nvml::Library& library, const Node& node,
                                                    HealthBoard& board, HealthOptions options) {
  std::unique_ptr<HealthMonitor> monitor(
      new HealthMonitor(library, node, board, std::move(options)));
  monitor->thread_ = std::thread([m = monitor.get()] { m->Run(); });
  return monitor;
}

HealthMonitor::HealthMonitor(const nvml::Library& library, const Node& node, HealthBoard& board,
                             HealthOptions options)
    : library_(library), node_(node), board_(board), options_(std::move(options)) {
  for (const NodeGpu& gpu : node_.gpus) {
    absl::StatusOr<nvml::Device> device = nvml::DeviceAt(library_, gpu.index);
    devices_.push_back(device.ok() ? std::optional<nvml::Device>(*device) : std::nullopt);
  }
  watched_.assign(node_.gpus.size(), false);
}

HealthMonitor::~HealthMonitor() {
  stop_ = true;
  {
    std::lock_guard lock(pause_mutex_);
    pause_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

std::string HealthMonitor::GpuName(size_t gpu) const {
  return absl::StrCat("GPU ", node_.gpus[gpu].index, " (", node_.gpus[gpu].uuid, ")");
}

void HealthMonitor::PauseFor(std::chrono::milliseconds pause) {
  std::unique_lock lock(pause_mutex_);
  pause_.wait_for(lock, pause, [&] { return stop_.load(); });
}

void HealthMonitor::Run() {
  RebuildEventSet();
  while (!stop_) {
    std::chrono::milliseconds slice = kWaitSlice;
    if (!gpu_trouble_.empty() || !mig_trouble_.empty()) {
      auto until_probe =
          std::chrono::duration_cast<std::chrono::milliseconds>(next_probe_ - Clock::now());
      slice = std::clamp(until_probe, std::chrono::milliseconds(1), kWaitSlice);
    }
    bool any_watched = std::find(watched_.begin(), watched_.end(), true) != watched_.end();
    if (!events_ || !any_watched) {
      PauseFor(slice);
    } else {
      absl::StatusOr<std::optional<nvml::Event>> event = events_->Wait(slice);
      if (event.ok()) {
        if (*event && ((*event)->type & nvmlEventTypeXidCriticalError) != 0) HandleXid(**event);
      } else if (nvml::IsGpuLost(event.status())) {
        FindLostGpus();
      } else {
        spdlog::warn("health: waiting for NVML events failed: {}; retrying",
                     event.status().message());
        PauseFor(std::chrono::milliseconds(500));
        rebuild_ = true;
      }
    }
    if (Clock::now() >= next_probe_) ProbeTroubled();
    if (rebuild_ && !stop_) RebuildEventSet();
  }
}

void HealthMonitor::RebuildEventSet() {
  rebuild_ = false;
  events_.reset();
  watched_.assign(node_.gpus.size(), false);
  absl::StatusOr<std::unique_ptr<nvml::EventSet>> events = nvml::EventSet::Create(library_);
  if (!events.ok()) {
    spdlog::error("health: cannot create an NVML event set: {}; devices stay as they are",
                  events.status().message());
    return;
  }
  events_ = std::move(*events);
  for (size_t gpu = 0; gpu < node_.gpus.size(); ++gpu) {
    if (lost_.contains(gpu) || !devices_[gpu]) continue;
    absl::Status st = events_->Register(*devices_[gpu], nvmlEventTypeXidCriticalError);
    if (st.ok()) {
      watched_[gpu] = true;
    } else if (nvml::IsNotSupported(st)) {
      // As NVIDIA's plugin: an old GPU or driver without XID events is not a broken GPU.
      spdlog::warn("health: {} is too old to support health checking ({}); it stays Healthy",
                   GpuName(gpu), st.message());
    } else if (nvml::IsGpuLost(st)) {
      lost_.insert(gpu);
      MarkGpu(gpu, absl::StrCat("the GPU is lost (", st.message(), ")"), false);
    } else {
      MarkGpu(gpu, absl::StrCat("cannot watch its XID events (", st.message(), ")"), false);
    }
  }
}

void HealthMonitor::HandleXid(const nvml::Event& event) {
  size_t gpu = node_.gpus.size();
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] && devices_[i]->handle() == event.device) gpu = i;
  }
  if (gpu == node_.gpus.size()) {
    spdlog::debug("health: XID {} on a device that is not advertised; ignored", event.data);
    return;
  }
  std::string what = absl::StrCat("XID ", event.data, " (", XidMeaning(event.data), ")");
  if (!options_.xids.Critical(event.data)) {
    spdlog::info("health: {} on {}: not a device failure; ignored", what, GpuName(gpu));
    return;
  }
  // An XID scoped to a MIG instance marks that MIG device only, as NVIDIA's plugin does.
  if (event.gpu_instance_id) {
    bool matched = false;
    for (const MigSlice& mig : node_.gpus[gpu].migs) {
      if (mig.gi != *event.gpu_instance_id) continue;
      if (event.compute_instance_id && mig.ci != *event.compute_instance_id) continue;
      MarkMig(MigKey{gpu, mig.gi, mig.ci}, what);
      matched = true;
    }
    if (matched) return;
  }
  MarkGpu(gpu, what, true);
}

void HealthMonitor::FindLostGpus() {
  bool found = false;
  for (size_t gpu = 0; gpu < node_.gpus.size(); ++gpu) {
    if (!watched_[gpu]) continue;
    std::string why;
    if (!Answers(gpu, &why) && !lost_.contains(gpu)) {
      spdlog::warn("health: {} does not answer ({}); the other GPUs stay watched", GpuName(gpu),
                   why);
      lost_.insert(gpu);
      MarkGpu(gpu, absl::StrCat("the GPU is lost (", why, ")"), false);
      found = true;
    }
  }
  // Leave the lost GPUs out of the set: a wait on a set holding one reports the loss forever.
  rebuild_ = true;
  if (!found) PauseFor(std::chrono::milliseconds(100));
}

bool HealthMonitor::Answers(size_t gpu, std::string* why) const {
  if (!devices_[gpu]) {
    *why = "no NVML handle";
    return false;
  }
  absl::StatusOr<nvml::MemoryInfo> memory = devices_[gpu]->Memory();
  if (memory.ok() || nvml::IsNotSupported(memory.status())) return true;
  *why = std::string(memory.status().message());
  return false;
}

void HealthMonitor::ProbeTroubled() {
  auto period = options_.recovery_period;
  next_probe_ = Clock::now() + std::clamp(period / 4, std::chrono::milliseconds(10),
                                          std::chrono::milliseconds(1000));
  if (period.count() == 0) return;
  std::map<size_t, bool> answers;
  auto answered = [&](size_t gpu) {
    auto it = answers.find(gpu);
    if (it != answers.end()) return it->second;
    std::string why;
    bool ok = Answers(gpu, &why);
    answers[gpu] = ok;
    if (ok && lost_.erase(gpu) > 0) {
      spdlog::warn("health: {} answers again; watching its XID events", GpuName(gpu));
      rebuild_ = true;
    }
    return ok;
  };
  Clock::time_point now = Clock::now();
  // True when the unit's quiet period is over.
  auto quiet = [&](Trouble& trouble, size_t gpu) {
    if (!answered(gpu)) {
      trouble.last_bad = now;
      trouble.answering_since.reset();
      return false;
    }
    if (!trouble.answering_since) trouble.answering_since = now;
    return now - std::max(trouble.last_bad, *trouble.answering_since) >= period;
  };
  for (auto it = gpu_trouble_.begin(); it != gpu_trouble_.end();) {
    if (quiet(it->second, it->first)) {
      board_.SetGpu(it->first, true);
      spdlog::warn("health: {} is Healthy again: NVML answered normally for {} after {}",
                   GpuName(it->first), Seconds(period), it->second.reason);
      it = gpu_trouble_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = mig_trouble_.begin(); it != mig_trouble_.end();) {
    const MigKey& mig = it->first;
    if (quiet(it->second, mig.gpu)) {
      board_.SetMig(mig, true);
      spdlog::warn(
          "health: MIG device gi {} ci {} of {} is Healthy again: NVML answered normally "
          "for {} after {}",
          mig.gi, mig.ci, GpuName(mig.gpu), Seconds(period), it->second.reason);
      it = mig_trouble_.erase(it);
    } else {
      ++it;
    }
  }
}

void HealthMonitor::MarkGpu(size_t gpu, const std::string& reason, bool answering) {
  Clock::time_point now = Clock::now();
  gpu_trouble_[gpu] = Trouble{now, reason, answering ? std::optional(now) : std::nullopt};
  if (board_.SetGpu(gpu, false)) {
    std::string recovery = options_.recovery_period.count() == 0
                               ? "until the plugin restarts"
                               : absl::StrCat("until NVML has answered normally for ",
                                              Seconds(options_.recovery_period));
    spdlog::warn("health: {} is Unhealthy: {}; its devices are withdrawn {}", GpuName(gpu), reason,
                 recovery);
  }
}

void HealthMonitor::MarkMig(const MigKey& mig, const std::string& reason) {
  Clock::time_point now = Clock::now();
  mig_trouble_[mig] = Trouble{now, reason, now};
  if (board_.SetMig(mig, false)) {
    spdlog::warn("health: MIG device gi {} ci {} of {} is Unhealthy: {}", mig.gi, mig.ci,
                 GpuName(mig.gpu), reason);
  }
}

}  // namespace gpunode::plugin
