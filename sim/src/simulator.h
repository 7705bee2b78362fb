// The simulator behind the exported C functions: configuration, NVML's init reference count,
// and the one mutex that makes every call thread-safe.
//
// The C ABI has no context argument, so the library keeps exactly one Simulator per process
// (Simulator::instance()). It is the only mutable global state in the simulator.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "node_state.h"

namespace gpunode::sim {

class Simulator {
 public:
  static Simulator& instance();

  // gpunodeSimConfigure: 0 on success; 1 with `error` set for bad input; 2 while initialized.
  int configure(const char* spec, const char* topology_file, std::string& error);

  nvmlReturn_t init();
  nvmlReturn_t shutdown();
  // NVML's text for `result`; for the code an automatic configuration failed with, that failure.
  const char* error_string(nvmlReturn_t result);

  // Runs `fn(NodeState&)` under the lock with the timeline brought up to now; UNINITIALIZED
  // unless nvmlInit has been called more often than nvmlShutdown.
  template <typename Fn>
  nvmlReturn_t with_node(Fn&& fn) {
    std::unique_lock lock(mutex_);
    if (init_count_ == 0 || !node_) return NVML_ERROR_UNINITIALIZED;
    if (node_->advance(NodeState::Clock::now())) changed_.notify_all();
    return fn(*node_);
  }

  // nvmlEventSetWait_v2: blocks on a condition variable until an event for `set` is due, a GPU
  // it watches is lost, or `timeout_ms` passes.
  nvmlReturn_t wait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned timeout_ms);
  nvmlReturn_t free_event_set(nvmlEventSet_t set);

 private:
  Simulator() = default;
  // Loads from GPUNODE_SIM / GPUNODE_SIM_TOPOLOGY (default: dgx-h100); with the lock held.
  bool configure_from_environment();
  int configure_locked(const char* spec, const char* topology_file, std::string& error);

  std::mutex mutex_;
  std::condition_variable changed_;  // timeline events delivered, sets freed, shutdown
  std::unique_ptr<NodeState> node_;
  int init_count_ = 0;
  std::string environment_error_;  // why GPUNODE_SIM could not be loaded, for nvmlErrorString
};

// The code nvmlInit returns when the automatic configuration fails; nvmlErrorString of it then
// gives the reason instead of NVML's fixed text.
constexpr nvmlReturn_t kConfigurationFailed = NVML_ERROR_DRIVER_NOT_LOADED;

}  // namespace gpunode::sim
