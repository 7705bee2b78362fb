#include "node_state.h"

#include <cmath>

namespace gpunode::sim {

NodeState::NodeState(NodeModel model, double clock_scale)
    : model_(std::move(model)), clock_scale_(clock_scale) {
  for (unsigned g = 0; g < model_.gpus.size(); ++g) {
    gpus_.emplace_back(std::move(model_.gpus[g]));
    gpu_handles_.push_back(std::make_unique<nvmlDevice_st>(nvmlDevice_st{g, -1}));
    valid_handles_.insert(gpu_handles_.back().get());
    auto& migs = mig_handles_.emplace_back();
    for (size_t m = 0; m < gpus_.back().model().mig_devices.size(); ++m) {
      migs.push_back(std::make_unique<nvmlDevice_st>(nvmlDevice_st{g, static_cast<int>(m)}));
      valid_handles_.insert(migs.back().get());
    }
  }
  model_.gpus.clear();
}

void NodeState::start_clock(Clock::time_point now) {
  if (!start_) start_ = now;
}

SimTime NodeState::now(Clock::time_point real) const {
  if (!start_ || real <= *start_) return SimTime{0};
  double elapsed = std::chrono::duration<double, std::nano>(real - *start_).count() * clock_scale_;
  return SimTime{static_cast<int64_t>(std::min(elapsed, 9.0e18))};
}

std::optional<NodeState::Clock::time_point> NodeState::next_due() const {
  if (!start_ || next_event_ >= model_.timeline.size()) return std::nullopt;
  double real_ns = static_cast<double>(model_.timeline[next_event_].at.count()) / clock_scale_;
  // Round up so that waking at this instant finds the event due.
  return *start_ +
         std::chrono::nanoseconds(static_cast<int64_t>(std::ceil(std::min(real_ns, 9.0e18))) + 1);
}

bool NodeState::advance(Clock::time_point real) {
  if (!start_) return false;
  SimTime sim_now = now(real);
  bool delivered = false;
  while (next_event_ < model_.timeline.size() && model_.timeline[next_event_].at <= sim_now) {
    size_t before = 0;
    for (const auto& [handle, set] : event_sets_) before += set->pending.size();
    apply(model_.timeline[next_event_++]);
    size_t after = 0;
    for (const auto& [handle, set] : event_sets_) after += set->pending.size();
    delivered = delivered || after > before;
  }
  return delivered;
}

void NodeState::deliver(unsigned gpu, unsigned long long type, unsigned long long data,
                        unsigned gpu_instance_id, unsigned compute_instance_id) {
  for (const auto& [handle, set] : event_sets_) {
    auto it = set->registered.find(gpu);
    if (it == set->registered.end() || (it->second & type) == 0) continue;
    set->pending.push_back(
        nvmlEventData_t{gpu_handles_[gpu].get(), type, data, gpu_instance_id, compute_instance_id});
  }
}

void NodeState::apply(const TimelineEvent& event) {
  GpuState& gpu = gpus_[event.gpu];
  // A lost GPU changes silently: the driver cannot report anything about it.
  bool reachable = !gpu.lost();
  switch (event.kind) {
    case TimelineKind::kXid:
      if (reachable)
        deliver(event.gpu, nvmlEventTypeXidCriticalError, event.xid, event.gpu_instance_id,
                event.compute_instance_id);
      break;
    case TimelineKind::kFallOffBus:
      // The driver reports Xid 79 ("GPU has fallen off the bus") before the GPU stops answering.
      deliver(event.gpu, nvmlEventTypeXidCriticalError, 79, kNoInstance, kNoInstance);
      gpu.set_lost(true);
      break;
    case TimelineKind::kRecover:
      gpu.set_lost(false);
      break;
    case TimelineKind::kProcessStart:
      gpu.start_process(event.process);
      break;
    case TimelineKind::kProcessExit:
      gpu.end_process(event.process.pid);
      break;
    case TimelineKind::kSet: {
      std::optional<unsigned> pstate_before = gpu.model().pstate;
      ClockSet clocks_before = gpu.model().clocks;
      gpu.apply_change(event.change, event.at);
      if (reachable && gpu.model().pstate != pstate_before)
        deliver(event.gpu, nvmlEventTypePState, 0, kNoInstance, kNoInstance);
      if (reachable && gpu.model().clocks != clocks_before)
        deliver(event.gpu, nvmlEventTypeClock, 0, kNoInstance, kNoInstance);
      break;
    }
    case TimelineKind::kEcc:
      gpu.add_ecc_errors(event.corrected, event.uncorrected);
      if (reachable && event.corrected > 0)
        deliver(event.gpu, nvmlEventTypeSingleBitEccError, 0, kNoInstance, kNoInstance);
      if (reachable && event.uncorrected > 0)
        deliver(event.gpu, nvmlEventTypeDoubleBitEccError, 0, kNoInstance, kNoInstance);
      break;
    case TimelineKind::kRemap:
      gpu.change_remapped_rows(event);
      break;
  }
}

nvmlDevice_t NodeState::mig_handle(unsigned gpu, unsigned slot) {
  const auto& migs = gpus_[gpu].model().mig_devices;
  for (size_t m = 0; m < migs.size(); ++m) {
    if (migs[m].index == slot) return mig_handles_[gpu][m].get();
  }
  return nullptr;
}

const nvmlDevice_st* NodeState::resolve(nvmlDevice_t device) const {
  return valid_handles_.contains(device) ? device : nullptr;
}

unsigned long long NodeState::supported_events(unsigned gpu) const {
  const GpuModel& model = gpus_[gpu].model();
  unsigned long long types = nvmlEventTypeXidCriticalError;
  if (model.pstate) types |= nvmlEventTypePState;
  if (model.clocks[NVML_CLOCK_GRAPHICS] || model.clocks[NVML_CLOCK_SM]) types |= nvmlEventTypeClock;
  if (model.ecc_enabled.value_or(false))
    types |= nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError;
  return types;
}

nvmlEventSet_t NodeState::create_event_set() {
  auto set = std::make_shared<nvmlEventSet_st>();
  nvmlEventSet_t handle = set.get();
  event_sets_.emplace(handle, std::move(set));
  return handle;
}

std::shared_ptr<nvmlEventSet_st> NodeState::event_set(nvmlEventSet_t set) const {
  auto it = event_sets_.find(set);
  return it == event_sets_.end() ? nullptr : it->second;
}

bool NodeState::free_event_set(nvmlEventSet_t set) {
  auto it = event_sets_.find(set);
  if (it == event_sets_.end()) return false;
  it->second->freed = true;
  event_sets_.erase(it);
  return true;
}

void NodeState::free_all_event_sets() {
  for (auto& [handle, set] : event_sets_) set->freed = true;
  event_sets_.clear();
}

bool NodeState::watches_lost_gpu(const nvmlEventSet_st& set) const {
  for (const auto& [gpu, types] : set.registered) {
    if (gpus_[gpu].lost()) return true;
  }
  return false;
}

}  // namespace gpunode::sim
