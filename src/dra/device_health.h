// How the health monitor's verdicts (src/health, the same XID classes and recovery evidence as the
// device plugin's) reach the DRA plugin's two audiences: the kubelet's health stream (KEP-4680,
// shown in the pods' allocatedResourcesStatus) and the ResourceSlice's device taints (KEP-5055,
// which keep the scheduler off a failed device). Taint keys and effects are NVIDIA's DRA driver's:
//   gpu.nvidia.com/xid=<xid>:NoSchedule    an XID that made the device Unhealthy
//   gpu.nvidia.com/gpu-lost:NoSchedule     the GPU fell off the bus
//   gpu.nvidia.com/unmonitored:NoSchedule  its XID events cannot be watched (NVML failed)
//   gpu.nvidia.com/unmonitored:None        the GPU is too old for XID events (informational)
// Unlike NVIDIA's driver, a taint is removed as soon as the monitor has the evidence that the
// fault is gone (docs/DRA.md, "Health").
#pragma once

#include <vector>

#include "dra/kubelet_service.h"
#include "gpu/dra_devices.h"
#include "health/health_board.h"
#include "health/health_monitor.h"

namespace gpunode::dra {

// The GPUs the monitor watches for `devices`, one per GPU in order of first appearance, with the
// MIG devices announced of it. A device's board position is its GPU's position in this list.
std::vector<health::MonitoredGpu> MonitoredGpus(const std::vector<gpu::DraDevice>& devices);

// The taints the board's state gives each device, set in place (replacing earlier ones). A device
// of a GPU in `lost` (NVML indexes the last scan could not read) is tainted gpu-lost whatever the
// board says: the monitor may not have seen the fall yet.
void ApplyTaints(const health::HealthBoard& board, const std::vector<unsigned>& lost,
                 std::vector<gpu::DraDevice>& devices);

// The health stream's list: every device, Healthy or Unhealthy with the fault's reason.
std::vector<DeviceHealth> HealthOf(const health::HealthBoard& board,
                                   const std::vector<unsigned>& lost,
                                   const std::vector<gpu::DraDevice>& devices);

// The devices of a new scan, with the devices of `before` whose GPU the scan lists as lost kept
// in their place: a GPU that fell off the bus stays in the slice, tainted, instead of vanishing.
std::vector<gpu::DraDevice> KeepLostDevices(const std::vector<gpu::DraDevice>& before,
                                            const gpu::DraNode& now);

}  // namespace gpunode::dra
