#include "gpu_state.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace gpunode::sim {
namespace {

double seconds(SimTime t) { return std::chrono::duration<double>(t).count(); }

void add_saturating(uint64_t& value, int64_t delta) {
  if (delta >= 0) {
    value += static_cast<uint64_t>(delta);
  } else {
    value -= std::min(value, static_cast<uint64_t>(-delta));
  }
}

void add_counter(std::optional<uint64_t>& counter, uint64_t amount) {
  if (counter) *counter += amount;
}

}  // namespace

GpuState::GpuState(GpuModel model) : model_(std::move(model)) {
  energy_mj_ = static_cast<double>(model_.energy_mj.value_or(0));
}

std::optional<unsigned>& GpuState::field(Metric metric) {
  return const_cast<std::optional<unsigned>&>(std::as_const(*this).field(metric));
}

const std::optional<unsigned>& GpuState::field(Metric metric) const {
  switch (metric) {
    case Metric::kUtilizationGpu:
      return model_.utilization_gpu;
    case Metric::kUtilizationMemory:
      return model_.utilization_memory;
    case Metric::kUtilizationEncoder:
      return model_.utilization_encoder;
    case Metric::kUtilizationDecoder:
      return model_.utilization_decoder;
    case Metric::kTemperature:
      return model_.temperature_c;
    case Metric::kPower:
      break;
  }
  return model_.power_mw;
}

std::optional<unsigned> GpuState::metric(Metric metric, SimTime now) const {
  const std::optional<unsigned>& value = field(metric);
  const std::optional<Ramp>& ramp = ramps_[static_cast<size_t>(metric)];
  if (!value || !ramp || now >= ramp->end) return value;
  if (now <= ramp->start) return static_cast<unsigned>(std::llround(ramp->from));
  double progress = seconds(now - ramp->start) / seconds(ramp->end - ramp->start);
  return static_cast<unsigned>(std::llround(ramp->from + (ramp->to - ramp->from) * progress));
}

double GpuState::power_at(SimTime t) const {
  return static_cast<double>(metric(Metric::kPower, t).value_or(0));
}

void GpuState::advance_energy(SimTime to) {
  if (to <= energy_time_) return;
  // Power is linear between the ramp's ends and constant outside, so the trapezoid rule over
  // pieces split at those ends is exact.
  const std::optional<Ramp>& ramp = ramps_[static_cast<size_t>(Metric::kPower)];
  SimTime from = energy_time_;
  std::array<SimTime, 4> cuts = {from, to, to, to};
  if (ramp) {
    cuts[1] = std::clamp(ramp->start, from, to);
    cuts[2] = std::clamp(ramp->end, from, to);
  }
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    if (cuts[i + 1] <= cuts[i]) continue;
    energy_mj_ +=
        (power_at(cuts[i]) + power_at(cuts[i + 1])) / 2.0 * seconds(cuts[i + 1] - cuts[i]);
  }
  energy_time_ = to;
}

std::optional<uint64_t> GpuState::energy_mj(SimTime now) {
  if (!model_.energy_mj) return std::nullopt;
  advance_energy(now);
  return static_cast<uint64_t>(energy_mj_);
}

void GpuState::apply_change(const MetricChange& change, SimTime at) {
  advance_energy(at);
  auto set = [&](Metric which, const std::optional<unsigned>& target) {
    if (!target) return;
    std::optional<unsigned>& value = field(which);
    std::optional<Ramp>& ramp = ramps_[static_cast<size_t>(which)];
    if (value && change.over > SimTime{0}) {
      // From wherever the metric is now, which may be part-way along an earlier ramp.
      ramp = Ramp{static_cast<double>(*metric(which, at)), static_cast<double>(*target), at,
                  at + change.over};
    } else {
      ramp.reset();
    }
    value = target;
  };
  set(Metric::kUtilizationGpu, change.utilization_gpu);
  set(Metric::kUtilizationMemory, change.utilization_memory);
  set(Metric::kUtilizationEncoder, change.utilization_encoder);
  set(Metric::kUtilizationDecoder, change.utilization_decoder);
  set(Metric::kTemperature, change.temperature_c);
  set(Metric::kPower, change.power_mw);
  if (change.pstate) model_.pstate = change.pstate;
  for (size_t i = 0; i < change.clocks.size(); ++i) {
    if (change.clocks[i]) model_.clocks[i] = change.clocks[i];
  }
}

void GpuState::adjust_memory(unsigned gpu_instance_id, unsigned compute_instance_id,
                             int64_t delta_bytes) {
  if (model_.memory) add_saturating(model_.memory->used_bytes, delta_bytes);
  for (MigDevice& mig : model_.mig_devices) {
    if (mig.gpu_instance_id == gpu_instance_id && mig.compute_instance_id == compute_instance_id) {
      add_saturating(mig.memory.used_bytes, delta_bytes);
    }
  }
}

void GpuState::start_process(const ProcessInfo& process) {
  model_.processes.push_back(process);
  adjust_memory(process.gpu_instance_id, process.compute_instance_id,
                static_cast<int64_t>(process.used_bytes.value_or(0)));
}

void GpuState::end_process(unsigned pid) {
  auto it = std::find_if(model_.processes.begin(), model_.processes.end(),
                         [&](const ProcessInfo& p) { return p.pid == pid; });
  if (it == model_.processes.end()) return;
  adjust_memory(it->gpu_instance_id, it->compute_instance_id,
                -static_cast<int64_t>(it->used_bytes.value_or(0)));
  model_.processes.erase(it);
}

void GpuState::add_ecc_errors(uint64_t corrected, uint64_t uncorrected) {
  add_counter(model_.ecc.corrected_volatile, corrected);
  add_counter(model_.ecc.corrected_aggregate, corrected);
  add_counter(model_.ecc.uncorrected_volatile, uncorrected);
  add_counter(model_.ecc.uncorrected_aggregate, uncorrected);
}

void GpuState::change_remapped_rows(const TimelineEvent& event) {
  RemappedRows& rows = *model_.remapped_rows;
  rows.corrected += static_cast<unsigned>(event.corrected);
  rows.uncorrected += static_cast<unsigned>(event.uncorrected);
  if (event.remap_pending) rows.pending = *event.remap_pending;
  if (event.remap_failure) rows.failure = *event.remap_failure;
}

}  // namespace gpunode::sim
