#include "nvml/event_set.h"

#include "core/status_macros.h"
#include "nvml/library.h"

namespace gpunode::nvml {

absl::StatusOr<std::unique_ptr<EventSet>> EventSet::Create(const Library& library) {
  nvmlEventSet_t set = nullptr;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(library, event_set_create, &set));
  return std::unique_ptr<EventSet>(new EventSet(library, set));
}

EventSet::~EventSet() {
  if (library_.entry_points().event_set_free != nullptr)
    library_.entry_points().event_set_free(set_);
}

absl::Status EventSet::Register(const Device& device, uint64_t mask) {
  unsigned long long supported = 0;
  RETURN_IF_ERROR(
      GPUNODE_NVML_CALL(library_, device_get_supported_event_types, device.handle(), &supported));
  unsigned long long wanted = mask & supported;
  if (wanted == 0) {
    return FromReturn(NVML_ERROR_NOT_SUPPORTED, "nvmlDeviceRegisterEvents",
                      "none of the requested event types is supported by this GPU");
  }
  return GPUNODE_NVML_CALL(library_, device_register_events, device.handle(), wanted, set_);
}

absl::StatusOr<std::optional<Event>> EventSet::Wait(std::chrono::milliseconds timeout) {
  nvmlEventData_t data{};
  absl::Status st = GPUNODE_NVML_CALL(library_, event_set_wait, set_, &data,
                                      static_cast<unsigned>(timeout.count()));
  if (ReturnOf(st) == NVML_ERROR_TIMEOUT) return std::optional<Event>();
  RETURN_IF_ERROR(st);
  Event event;
  event.device = data.device;
  event.type = data.eventType;
  event.data = data.eventData;
  if (data.gpuInstanceId != kNvmlNoInstanceId) event.gpu_instance_id = data.gpuInstanceId;
  if (data.computeInstanceId != kNvmlNoInstanceId)
    event.compute_instance_id = data.computeInstanceId;
  return std::optional<Event>(event);
}

}  // namespace gpunode::nvml
