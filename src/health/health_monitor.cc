#include "health/health_monitor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/file_io.h"
#include "core/log.h"
#include "host/plugin_health_state.h"
#include "nvml/status.h"
#include "nvml/system.h"
#include "spdlog/spdlog.h"

namespace gpunode::health {
namespace {

// Bounds how long Stop() waits for an NVML wait to return (NVML's cannot be interrupted), and is
// how often an idle monitor wakes: each wake is CPU a node spends on nothing (NVIDIA's plugin
// waits 5 s), and a second keeps a SIGTERM prompt.
constexpr std::chrono::milliseconds kWaitSlice{1000};

std::string Seconds(std::chrono::milliseconds period) {
  return absl::StrCat(period.count() / 1000.0, "s");
}

const char* FaultName(FaultClass fault) {
  switch (fault) {
    case FaultClass::kMemory:
      return "memory";
    case FaultClass::kGpuLost:
      return "gpu-lost";
    case FaultClass::kNvLink:
      return "nvlink";
    case FaultClass::kResponds:
      break;
  }
  return "other";
}

}  // namespace

std::unique_ptr<HealthMonitor> HealthMonitor::Start(const nvml::Library& library,
                                                    std::vector<MonitoredGpu> gpus,
                                                    HealthBoard& board, HealthOptions options) {
  std::unique_ptr<HealthMonitor> monitor(
      new HealthMonitor(library, std::move(gpus), board, std::move(options)));
  monitor->thread_ = std::thread([m = monitor.get()] { m->Run(); });
  return monitor;
}

HealthMonitor::HealthMonitor(const nvml::Library& library, std::vector<MonitoredGpu> gpus,
                             HealthBoard& board, HealthOptions options)
    : library_(library), gpus_(std::move(gpus)), board_(board), options_(std::move(options)) {
  for (const MonitoredGpu& gpu : gpus_) {
    absl::StatusOr<nvml::Device> device = nvml::DeviceAt(library_, gpu.index);
    devices_.push_back(device.ok() ? std::optional<nvml::Device>(*device) : std::nullopt);
    baselines_.push_back(device.ok() ? BaselineOf(*device, gpu.uuid) : GpuBaseline{gpu.uuid, {}});
  }
  watched_.assign(gpus_.size(), false);
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
  return absl::StrCat("GPU ", gpus_[gpu].index, " (", gpus_[gpu].uuid, ")");
}

std::string HealthMonitor::MigName(const MigKey& mig) const {
  return absl::StrCat("MIG device gi ", mig.gi, " ci ", mig.ci, " of ", GpuName(mig.gpu));
}

std::string HealthMonitor::RecoveryRule() const {
  if (options_.recovery_period.count() == 0) return "until the plugin restarts";
  return absl::StrCat("until it shows the fault is gone for ", Seconds(options_.recovery_period),
                      " without a new XID");
}

void HealthMonitor::Republish() {
  republish_ = true;
  std::lock_guard lock(pause_mutex_);
  pause_.notify_all();
}

void HealthMonitor::PauseFor(std::chrono::milliseconds pause) {
  std::unique_lock lock(pause_mutex_);
  pause_.wait_for(lock, pause, [&] { return stop_.load() || republish_.load(); });
}

void HealthMonitor::Run() {
  RebuildEventSet();
  // At once, so that the file says this plugin watches the GPUs even while all stay healthy.
  Publish();
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
    if (republish_.exchange(false)) Publish();
  }
}

void HealthMonitor::RebuildEventSet() {
  rebuild_ = false;
  events_.reset();
  watched_.assign(gpus_.size(), false);
  absl::StatusOr<std::unique_ptr<nvml::EventSet>> events = nvml::EventSet::Create(library_);
  if (!events.ok()) {
    spdlog::error("health: cannot create an NVML event set: {}; devices stay as they are",
                  events.status().message());
    return;
  }
  events_ = std::move(*events);
  for (size_t gpu = 0; gpu < gpus_.size(); ++gpu) {
    if (lost_.contains(gpu) || !devices_[gpu]) continue;
    absl::Status st = events_->Register(*devices_[gpu], nvmlEventTypeXidCriticalError);
    if (st.ok()) {
      watched_[gpu] = true;
    } else if (nvml::IsNotSupported(st)) {
      // As NVIDIA's plugin: an old GPU or driver without XID events is not a broken GPU.
      spdlog::warn("health: {} is too old to support health checking ({}); it stays Healthy",
                   GpuName(gpu), st.message());
      board_.SetUnmonitored(gpu, std::string(st.message()));
    } else if (nvml::IsGpuLost(st)) {
      lost_.insert(gpu);
      MarkGpu(gpu, absl::StrCat("the GPU is lost (", st.message(), ")"), FaultClass::kGpuLost);
    } else {
      MarkGpu(gpu, absl::StrCat("cannot watch its XID events (", st.message(), ")"),
              FaultClass::kResponds);
    }
  }
}

void HealthMonitor::HandleXid(const nvml::Event& event) {
  size_t gpu = gpus_.size();
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] && devices_[i]->handle() == event.device) gpu = i;
  }
  if (gpu == gpus_.size()) {
    spdlog::debug("health: XID {} on a device that is not advertised; ignored", event.data);
    return;
  }
  std::string what = absl::StrCat("XID ", event.data, " (", XidMeaning(event.data), ")");
  if (!options_.xids.Critical(event.data)) {
    spdlog::info("health: {} on {}: not a device failure; ignored", what, GpuName(gpu));
    return;
  }
  FaultClass fault = ClassifyXid(event.data);
  // An XID scoped to a MIG instance marks that MIG device only, as NVIDIA's plugin does.
  if (event.gpu_instance_id) {
    bool matched = false;
    for (const MonitoredMig& mig : gpus_[gpu].migs) {
      if (mig.gi != *event.gpu_instance_id) continue;
      if (event.compute_instance_id && mig.ci != *event.compute_instance_id) continue;
      MarkMig(MigKey{gpu, mig.gi, mig.ci}, what, fault, event.data);
      matched = true;
    }
    if (matched) return;
  }
  MarkGpu(gpu, what, fault, event.data);
}

void HealthMonitor::FindLostGpus() {
  bool found = false;
  for (size_t gpu = 0; gpu < gpus_.size(); ++gpu) {
    if (!watched_[gpu]) continue;
    std::string why;
    if (!Answers(gpu, &why) && !lost_.contains(gpu)) {
      spdlog::warn("health: {} does not answer ({}); the other GPUs stay watched", GpuName(gpu),
                   why);
      lost_.insert(gpu);
      MarkGpu(gpu, absl::StrCat("the GPU is lost (", why, ")"), FaultClass::kGpuLost);
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
  for (size_t gpu : std::set<size_t>(lost_)) {
    std::string why;
    if (Answers(gpu, &why)) {
      spdlog::warn("health: {} answers again; watching its XID events", GpuName(gpu));
      lost_.erase(gpu);
      rebuild_ = true;
    }
  }
  Clock::time_point now = Clock::now();
  bool changed = false;
  for (auto it = gpu_trouble_.begin(); it != gpu_trouble_.end();) {
    if (Recovered(it->second, it->first, GpuName(it->first), now)) {
      board_.SetGpu(it->first, true);
      it = gpu_trouble_.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  for (auto it = mig_trouble_.begin(); it != mig_trouble_.end();) {
    if (Recovered(it->second, it->first.gpu, MigName(it->first), now)) {
      board_.SetMig(it->first, true);
      it = mig_trouble_.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  if (changed) Publish();
}

bool HealthMonitor::Recovered(Trouble& trouble, size_t gpu, const std::string& unit,
                              Clock::time_point now) {
  if (!trouble.held.empty()) return false;
  Evidence evidence = JudgeRecovery(devices_[gpu], baselines_[gpu], trouble.faults);
  if (evidence.verdict == Evidence::kNever) {
    trouble.held = evidence.what;
    spdlog::error("health: {} stays Unhealthy until the plugin restarts: {} (after {})", unit,
                  evidence.what, trouble.reason);
    Publish();
    return false;
  }
  if (evidence.verdict == Evidence::kNotYet) {
    if (trouble.waiting_for != evidence.what) {
      spdlog::info("health: {} stays Unhealthy: {}", unit, evidence.what);
      trouble.waiting_for = evidence.what;
      Publish();
    }
    trouble.evidence_since.reset();
    return false;
  }
  if (!trouble.evidence_since) trouble.evidence_since = now;
  if (now - std::max(trouble.last_bad, *trouble.evidence_since) < options_.recovery_period)
    return false;
  spdlog::warn("health: {} is Healthy again: {} for {} without a new XID, after {}", unit,
               evidence.what, Seconds(options_.recovery_period), trouble.reason);
  return true;
}

HealthMonitor::Trouble& HealthMonitor::Note(Trouble& trouble, const std::string& reason,
                                            FaultClass fault) {
  trouble.last_bad = Clock::now();
  trouble.reason = reason;
  trouble.faults.insert(fault);
  trouble.evidence_since.reset();
  return trouble;
}

void HealthMonitor::CountFall(size_t gpu, Trouble& trouble, const std::string& unit) {
  if (options_.flap_limit == 0) return;
  std::deque<Clock::time_point>& falls = falls_[gpu];
  Clock::time_point now = Clock::now();
  while (!falls.empty() && now - falls.front() >= options_.flap_window) falls.pop_front();
  falls.push_back(now);
  if (falls.size() <= options_.flap_limit || !trouble.held.empty()) return;
  trouble.held =
      absl::StrCat("its GPU became Unhealthy ", falls.size(), " times within ",
                   Seconds(options_.flap_window), " (flap limit ", options_.flap_limit, ")");
  spdlog::error("health: {} stays Unhealthy until the plugin restarts: {}", unit, trouble.held);
}

void HealthMonitor::MarkGpu(size_t gpu, const std::string& reason, FaultClass fault,
                            std::optional<uint64_t> xid) {
  Trouble& trouble = Note(gpu_trouble_[gpu], reason, fault);
  if (board_.SetGpu(gpu, false, Fault{reason, fault, xid})) {
    spdlog::warn("health: {} is Unhealthy: {}; its devices are withdrawn {}", GpuName(gpu), reason,
                 RecoveryRule());
    CountFall(gpu, trouble, GpuName(gpu));
  }
  Publish();
}

void HealthMonitor::MarkMig(const MigKey& mig, const std::string& reason, FaultClass fault,
                            std::optional<uint64_t> xid) {
  Trouble& trouble = Note(mig_trouble_[mig], reason, fault);
  if (board_.SetMig(mig, false, Fault{reason, fault, xid})) {
    spdlog::warn("health: {} is Unhealthy: {}; it is withdrawn {}", MigName(mig), reason,
                 RecoveryRule());
    CountFall(mig.gpu, trouble, MigName(mig));
  }
  Publish();
}

void HealthMonitor::Publish() {
  if (options_.state_file.empty()) return;
  host::PluginHealthState state;
  auto entry = [&](size_t gpu, const Trouble& trouble) {
    host::UnhealthyDevice d;
    d.index = gpus_[gpu].index;
    d.uuid = gpus_[gpu].uuid;
    d.reason = trouble.reason;
    for (FaultClass fault : trouble.faults) d.faults.push_back(FaultName(fault));
    d.held = trouble.held;
    if (trouble.held.empty()) d.waiting_for = trouble.waiting_for;
    d.recovers = trouble.held.empty() && options_.recovery_period.count() != 0;
    return d;
  };
  for (const auto& [gpu, trouble] : gpu_trouble_) state.unhealthy.push_back(entry(gpu, trouble));
  for (const auto& [mig, trouble] : mig_trouble_) {
    host::UnhealthyDevice d = entry(mig.gpu, trouble);
    d.gpu_instance_id = mig.gi;
    d.compute_instance_id = mig.ci;
    state.unhealthy.push_back(std::move(d));
  }
  absl::Status st = core::WriteFileAtomic(options_.state_file, host::FormatPluginHealthState(state),
                                          0644, core::Backup::kNone);
  if (!st.ok()) spdlog::warn("health: cannot write {}: {}", options_.state_file, st.message());
}

}  // namespace gpunode::health
