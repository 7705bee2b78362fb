// GPU Performance Monitoring (GPM): profiling metrics (SM, tensor and FP pipes, DRAM, PCIe,
// NVLink) that NVML computes from two samples of a GPU's counters, on Hopper and later.
//
// Everything here is optional: a driver without the GPM symbols, or a GPU that is not
// supported, is an error for which nvml::IsNotSupported() is true, never a made-up value.
#pragma once

#include <array>
#include <optional>

#include "absl/status/statusor.h"
#include "nvml/abi.h"
#include "nvml/device.h"

namespace gpunode::nvml {

class Library;

// Whether the GPU (a physical GPU handle) supports GPM.
absl::StatusOr<bool> GpmSupported(const Library& library, const Device& gpu);

// One sample buffer, allocated by NVML and freed with the object.
class GpmSample {
 public:
  static absl::StatusOr<GpmSample> Allocate(const Library& library);
  GpmSample(GpmSample&& other) noexcept;
  GpmSample& operator=(GpmSample&& other) noexcept;
  ~GpmSample();

  // Reads the GPU's counters now. For a MIG device, pass the parent GPU and its GPU instance id.
  absl::Status Take(const Device& gpu);
  absl::Status TakeMig(const Device& parent, unsigned gpu_instance_id);

  nvmlGpmSample_t handle() const { return handle_; }

 private:
  GpmSample(const Library* library, nvmlGpmSample_t handle) : library_(library), handle_(handle) {}
  const Library* library_;
  nvmlGpmSample_t handle_;
};

// The metrics gpunode exports, in one request.
enum class GpmMetric {
  kGraphicsUtil,
  kSmUtil,
  kSmOccupancy,
  kAnyTensorUtil,
  kDramBwUtil,
  kFp64Util,
  kFp32Util,
  kFp16Util,
  kPcieTxMibPerSec,
  kPcieRxMibPerSec,
  kNvlinkTxMibPerSec,
  kNvlinkRxMibPerSec,
};
constexpr size_t kGpmMetricCount = 12;

// NVML's values (percent 0-100, or MiB/s) between `earlier` and `later`; a metric NVML declines
// (for example NVLink on a GPU without links) stays empty.
using GpmValues = std::array<std::optional<double>, kGpmMetricCount>;
absl::StatusOr<GpmValues> GpmMetrics(const Library& library, const GpmSample& earlier,
                                     const GpmSample& later);

}  // namespace gpunode::nvml
