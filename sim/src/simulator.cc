#include "simulator.h"

#include <cmath>
#include <cstdlib>

#include "container_view.h"
#include "error_strings.h"
#include "messages.h"
#include "mig_state_file.h"
#include "spec_loader.h"
#include "text_values.h"

namespace gpunode::sim {
namespace {

// GPUNODE_SIM_CLOCK_SCALE: simulated seconds per real second (default 1). nullopt if malformed.
std::optional<double> clock_scale(std::string& error) {
  const char* text = std::getenv("GPUNODE_SIM_CLOCK_SCALE");
  if (text == nullptr || trim(text).empty()) return 1.0;
  char* end = nullptr;
  double scale = std::strtod(text, &end);
  if (end == text || !trim(end).empty() || !std::isfinite(scale) || scale < 0.001 || scale > 1e6) {
    error = str_cat(
        "GPUNODE_SIM_CLOCK_SCALE: ", quote(text),
        " is not a clock scale; give simulated seconds per real second, from 0.001 to 1000000");
    return std::nullopt;
  }
  return scale;
}

}  // namespace

Simulator& Simulator::instance() {
  static Simulator simulator;
  return simulator;
}

int Simulator::configure(const char* spec, const char* topology_file, std::string& error) {
  std::lock_guard lock(mutex_);
  if (init_count_ > 0) {
    error =
        "the simulator cannot be reconfigured while NVML is initialized; call nvmlShutdown first";
    return 2;
  }
  return configure_locked(spec, topology_file, error);
}

int Simulator::configure_locked(const char* spec, const char* topology_file, std::string& error) {
  auto scale = clock_scale(error);
  if (!scale) return 1;
  auto loaded = load_spec(spec ? spec : "", topology_file ? topology_file : "");
  if (!loaded.ok()) {
    error = one_line(loaded.error());
    return 1;
  }
  NodeModel model = std::move(loaded.value());
  if (const char* dev = std::getenv("GPUNODE_SIM_DEVICE_NODES"); dev != nullptr && *dev != '\0') {
    if (!keep_gpus_with_device_nodes(model, dev, error)) return 1;
  }
  auto node = std::make_unique<NodeState>(std::move(model), *scale);
  if (const char* state = std::getenv("GPUNODE_SIM_STATE"); state != nullptr && *state != '\0') {
    node->set_mig_state_file(state);
    if (!load_mig_state(*node, state, error)) return 1;
  }
  node_ = std::move(node);
  environment_error_.clear();
  return 0;
}

bool Simulator::configure_from_environment() {
  const char* spec = std::getenv("GPUNODE_SIM");
  if (spec == nullptr || *spec == '\0') spec = "dgx-h100";
  std::string error;
  if (configure_locked(spec, std::getenv("GPUNODE_SIM_TOPOLOGY"), error) == 0) return true;
  environment_error_ = str_cat("gpunode simulator: ", error);
  return false;
}

nvmlReturn_t Simulator::init() {
  std::lock_guard lock(mutex_);
  if (!node_ && !configure_from_environment()) return kConfigurationFailed;
  node_->start_clock(NodeState::Clock::now());
  ++init_count_;
  return NVML_SUCCESS;
}

nvmlReturn_t Simulator::shutdown() {
  std::lock_guard lock(mutex_);
  if (init_count_ == 0) return NVML_ERROR_UNINITIALIZED;
  if (--init_count_ == 0) {
    // Real NVML invalidates event sets at the last shutdown; waiters wake and see it.
    node_->free_all_event_sets();
    changed_.notify_all();
  }
  return NVML_SUCCESS;
}

const char* Simulator::error_string(nvmlReturn_t result) {
  std::lock_guard lock(mutex_);
  // Valid until the next configuration: the text lives in environment_error_.
  if (result == kConfigurationFailed && !environment_error_.empty())
    return environment_error_.c_str();
  return nvml_error_text(result);
}

nvmlReturn_t Simulator::wait(nvmlEventSet_t handle, nvmlEventData_t* data, unsigned timeout_ms) {
  std::unique_lock lock(mutex_);
  if (init_count_ == 0 || !node_) return NVML_ERROR_UNINITIALIZED;
  std::shared_ptr<nvmlEventSet_st> set = node_->event_set(handle);
  if (!set || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto deadline = NodeState::Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    if (init_count_ == 0 || !node_) return NVML_ERROR_UNINITIALIZED;
    if (set->freed) return NVML_ERROR_INVALID_ARGUMENT;
    auto now = NodeState::Clock::now();
    if (node_->advance(now)) changed_.notify_all();
    if (!set->pending.empty()) {
      *data = set->pending.front();
      set->pending.pop_front();
      return NVML_SUCCESS;
    }
    // As after Xid 79 on a real driver: once the Xid is taken, the wait reports the loss.
    if (node_->watches_lost_gpu(*set)) return NVML_ERROR_GPU_IS_LOST;
    if (now >= deadline) return NVML_ERROR_TIMEOUT;
    auto wake = deadline;
    if (auto due = node_->next_due(); due && *due < wake) wake = *due;
    changed_.wait_until(lock, wake);
  }
}

nvmlReturn_t Simulator::free_event_set(nvmlEventSet_t set) {
  std::lock_guard lock(mutex_);
  if (init_count_ == 0 || !node_) return NVML_ERROR_UNINITIALIZED;
  if (!node_->free_event_set(set)) return NVML_ERROR_INVALID_ARGUMENT;
  changed_.notify_all();
  return NVML_SUCCESS;
}

}  // namespace gpunode::sim
