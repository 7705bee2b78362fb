#include "dra/device_health.h"

#include <algorithm>
#include <optional>
#include <string>

#include "core/text.h"

namespace gpunode::dra {
namespace {

constexpr char kXidTaint[] = "gpu.nvidia.com/xid";
constexpr char kLostTaint[] = "gpu.nvidia.com/gpu-lost";
constexpr char kUnmonitoredTaint[] = "gpu.nvidia.com/unmonitored";

struct BoardKey {
  size_t gpu = 0;
  std::optional<health::MigKey> mig;
};

// Positions follow MonitoredGpus(): GPUs in order of first appearance among the devices.
std::vector<BoardKey> BoardKeys(const std::vector<gpu::DraDevice>& devices) {
  std::vector<unsigned> order;
  std::vector<BoardKey> keys;
  for (const gpu::DraDevice& device : devices) {
    auto it = std::find(order.begin(), order.end(), device.gpu_index);
    size_t position = static_cast<size_t>(it - order.begin());
    if (it == order.end()) order.push_back(device.gpu_index);
    BoardKey key{position, std::nullopt};
    if (device.is_mig()) key.mig = health::MigKey{position, *device.gi, *device.ci};
    keys.push_back(key);
  }
  return keys;
}

bool IsLost(const std::vector<unsigned>& lost, const gpu::DraDevice& device) {
  return std::find(lost.begin(), lost.end(), device.gpu_index) != lost.end();
}

}  // namespace

std::vector<health::MonitoredGpu> MonitoredGpus(const std::vector<gpu::DraDevice>& devices) {
  std::vector<health::MonitoredGpu> gpus;
  for (const gpu::DraDevice& device : devices) {
    auto it = std::find_if(gpus.begin(), gpus.end(), [&](const health::MonitoredGpu& gpu) {
      return gpu.index == device.gpu_index;
    });
    if (it == gpus.end()) {
      gpus.push_back({.index = device.gpu_index, .uuid = device.gpu_uuid, .migs = {}});
      it = gpus.end() - 1;
    }
    if (device.is_mig()) it->migs.push_back({*device.gi, *device.ci});
  }
  return gpus;
}

void ApplyTaints(const health::HealthBoard& board, const std::vector<unsigned>& lost,
                 std::vector<gpu::DraDevice>& devices) {
  std::vector<BoardKey> keys = BoardKeys(devices);
  for (size_t i = 0; i < devices.size(); ++i) {
    std::vector<gpu::DeviceTaint>& taints = devices[i].taints;
    taints.clear();
    if (IsLost(lost, devices[i])) {
      taints.push_back({kLostTaint, "", "NoSchedule"});
    } else if (std::optional<health::Fault> fault = board.FaultOf(keys[i].gpu, keys[i].mig)) {
      if (fault->kind == health::FaultClass::kGpuLost) {
        taints.push_back({kLostTaint, "", "NoSchedule"});
      } else if (fault->xid) {
        taints.push_back({kXidTaint, core::StrCat(*fault->xid), "NoSchedule"});
      } else {
        taints.push_back({kUnmonitoredTaint, "", "NoSchedule"});
      }
    } else if (board.Unmonitored(keys[i].gpu)) {
      taints.push_back({kUnmonitoredTaint, "", "None"});
    }
  }
}

std::vector<DeviceHealth> HealthOf(const health::HealthBoard& board,
                                   const std::vector<unsigned>& lost,
                                   const std::vector<gpu::DraDevice>& devices) {
  std::vector<BoardKey> keys = BoardKeys(devices);
  std::vector<DeviceHealth> out;
  for (size_t i = 0; i < devices.size(); ++i) {
    DeviceHealth& entry = out.emplace_back();
    entry.device = devices[i].name;
    std::optional<health::Fault> fault = board.FaultOf(keys[i].gpu, keys[i].mig);
    if (!fault && IsLost(lost, devices[i])) {
      fault = health::Fault{.reason = "the GPU is lost: NVML cannot read it",
                            .kind = health::FaultClass::kGpuLost,
                            .xid = std::nullopt};
    }
    if (fault) {
      entry.healthy = false;
      entry.message = fault->reason;
    } else if (std::optional<std::string> why = board.Unmonitored(keys[i].gpu)) {
      entry.message =
          core::StrCat("not monitored: NVML delivers no XID events for it (", *why, ")");
    }
  }
  return out;
}

std::vector<gpu::DraDevice> KeepLostDevices(const std::vector<gpu::DraDevice>& before,
                                            const gpu::DraNode& now) {
  std::vector<gpu::DraDevice> out = now.devices;
  for (const gpu::DraDevice& device : before) {
    if (IsLost(now.lost, device)) out.push_back(device);
  }
  // Back in NVML index order, as a scan gives them; a stable sort keeps each GPU's MIG order.
  std::stable_sort(out.begin(), out.end(), [](const gpu::DraDevice& a, const gpu::DraDevice& b) {
    return a.gpu_index < b.gpu_index;
  });
  return out;
}

}  // namespace gpunode::dra
