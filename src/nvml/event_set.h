// An NVML event set (XID and ECC events), freed when the object goes away.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nvml/abi.h"
#include "nvml/device.h"

namespace gpunode::nvml {

class Library;

struct Event {
  nvmlDevice_t device = nullptr;
  uint64_t type = 0;  // nvmlEventType* bit
  uint64_t data = 0;  // the XID for nvmlEventTypeXidCriticalError
  std::optional<unsigned> gpu_instance_id;
  std::optional<unsigned> compute_instance_id;
};

class EventSet {
 public:
  static absl::StatusOr<std::unique_ptr<EventSet>> Create(const Library& library);
  ~EventSet();
  EventSet(const EventSet&) = delete;
  EventSet& operator=(const EventSet&) = delete;

  // Registers the event types of `mask` that `device` supports; NOT_SUPPORTED when none is.
  absl::Status Register(const Device& device, uint64_t mask);

  // Waits up to `timeout` for the next event. nullopt on timeout. NVML_ERROR_GPU_IS_LOST comes
  // back as an error status (nvml::IsGpuLost) when a registered GPU fell off the bus.
  absl::StatusOr<std::optional<Event>> Wait(std::chrono::milliseconds timeout);

 private:
  EventSet(const Library& library, nvmlEventSet_t set) : library_(library), set_(set) {}
  const Library& library_;
  nvmlEventSet_t set_;
};

}  // namespace gpunode::nvml
