// What NVML's opaque handles point to in the simulator. nvml/abi.h declares the structs without
// defining them, as the real library's header does; the simulator owns their definitions.
#pragma once

#include <deque>
#include <map>

#include "nvml/abi.h"

// A GPU (mig_position < 0) or one of its MIG devices (index into GpuModel::mig_devices).
// Handles live as long as the configuration, so they stay valid across nvmlShutdown/nvmlInit.
struct nvmlDevice_st {
  unsigned gpu;
  int mig_position;
};

// Registrations and the events due to this set that no wait has taken yet.
struct nvmlEventSet_st {
  std::map<unsigned, unsigned long long> registered;  // GPU index -> event type mask
  std::deque<nvmlEventData_t> pending;
  bool freed = false;  // tells a waiter on another thread that the set went away
};
