// Typed access to one GPU (or one MIG device) through the loaded NVML library.
//
// Every query returns StatusOr: a value the GPU does not report is an error for which
// nvml::IsNotSupported() is true, never a made-up 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nvml/abi.h"

namespace gpunode::nvml {

class Library;

struct PciInfo {
  std::string bus_id;  // "00000000:07:00.0"
  unsigned domain = 0, bus = 0, device = 0;
  uint32_t pci_device_id = 0;  // (device id << 16) | vendor id
  uint32_t pci_subsystem_id = 0;
};

struct MemoryInfo {
  uint64_t total_bytes = 0;
  uint64_t used_bytes = 0;  // excludes reserved when the driver can tell them apart
  uint64_t free_bytes = 0;
  std::optional<uint64_t> reserved_bytes;
};

struct UtilizationRates {
  unsigned gpu_pct = 0;
  unsigned memory_pct = 0;
};

struct ProcessInfo {
  unsigned pid = 0;
  std::optional<uint64_t> used_memory_bytes;  // unknown under Windows WDDM
  std::optional<unsigned> gpu_instance_id;    // set for processes inside a MIG instance
  std::optional<unsigned> compute_instance_id;
};

struct RemappedRows {
  unsigned correctable = 0;
  unsigned uncorrectable = 0;
  bool pending = false;
  bool failure_occurred = false;
};

struct NvLink {
  unsigned link = 0;
  std::string remote_bus_id;  // the peer GPU's or the NVSwitch's bus id
};

struct ComputeCapability {
  int major = 0;
  int minor = 0;
};

enum class ClockType { kGraphics, kSm, kMemory, kVideo };
enum class EccErrorType { kCorrected, kUncorrected };
enum class EccCounter { kVolatile, kAggregate };
enum class RetirementCause { kMultipleSingleBitEcc, kDoubleBitEcc };

// The text NVIDIA's DRA driver publishes for a brand in its ResourceSlice attribute `brand`
// ("Nvidia", "Tesla", "GeForce", "NvidiaRTX"...); "" for a value it cannot name, where that driver
// fails to publish the GPU.
std::string BrandName(nvmlBrandType_t brand);

// A GPU or MIG device handle with typed queries. Thread-safety: holds no state of its own beyond
// the handle; any method may be called from any thread while the Library lives.
class Device {
 public:
  Device(const Library* library, nvmlDevice_t handle) : library_(library), handle_(handle) {}

  nvmlDevice_t handle() const { return handle_; }

  absl::StatusOr<std::string> Uuid() const;
  absl::StatusOr<std::string> Name() const;
  absl::StatusOr<std::string> Serial() const;
  absl::StatusOr<unsigned> Index() const;
  absl::StatusOr<unsigned> MinorNumber() const;
  absl::StatusOr<unsigned> Architecture() const;  // nvmlDeviceArchitecture_t value
  // NVML_BRAND_*: the product line the GPU is sold under (NVIDIA, Tesla, GeForce, NVIDIA RTX...).
  absl::StatusOr<nvmlBrandType_t> Brand() const;
  absl::StatusOr<ComputeCapability> CudaComputeCapability() const;
  absl::StatusOr<PciInfo> Pci() const;
  absl::StatusOr<unsigned> NumaNode() const;
  absl::StatusOr<MemoryInfo> Memory() const;
  absl::StatusOr<UtilizationRates> Utilization() const;
  absl::StatusOr<unsigned> EncoderUtilizationPct() const;
  absl::StatusOr<unsigned> DecoderUtilizationPct() const;
  absl::StatusOr<unsigned> TemperatureC() const;
  absl::StatusOr<unsigned> PowerUsageMilliwatts() const;
  absl::StatusOr<unsigned> PowerLimitMilliwatts() const;
  absl::StatusOr<uint64_t> TotalEnergyMillijoules() const;
  absl::StatusOr<unsigned> FanSpeedPct() const;
  absl::StatusOr<int> PerformanceState() const;  // 0 for P0
  absl::StatusOr<unsigned> PcieReplayCounter() const;
  absl::StatusOr<unsigned> ClockMhz(ClockType type) const;
  absl::StatusOr<unsigned> MaxClockMhz(ClockType type) const;
  absl::StatusOr<bool> EccEnabled() const;
  absl::StatusOr<uint64_t> EccErrors(EccErrorType type, EccCounter counter) const;
  absl::StatusOr<unsigned> RetiredPageCount() const;  // both causes together
  absl::StatusOr<unsigned> RetiredPageCount(RetirementCause cause) const;
  // HBM temperature (NVML field NVML_FI_DEV_MEMORY_TEMP), where the GPU has a sensor.
  absl::StatusOr<unsigned> MemoryTemperatureC() const;
  absl::StatusOr<RemappedRows> Remapped() const;
  absl::StatusOr<bool> PersistenceModeEnabled() const;
  // NVML_GPU_VIRTUALIZATION_MODE_*: bare metal, passthrough, a vGPU guest or a vGPU host.
  absl::StatusOr<nvmlGpuVirtualizationMode_t> VirtualizationMode() const;
  // In a vGPU guest: whether the vGPU software licence the guest uses is held (a feature the
  // driver lists as enabled is licensed). NOT_SUPPORTED where the driver has no vGPU licensing.
  absl::StatusOr<bool> VgpuLicensed() const;
  // NVML_COMPUTEMODE_*; setting it needs root on a real GPU (NO_PERMISSION otherwise).
  absl::StatusOr<nvmlComputeMode_t> ComputeMode() const;
  absl::Status SetComputeMode(nvmlComputeMode_t mode) const;
  absl::StatusOr<std::vector<ProcessInfo>> ComputeProcesses() const;

  // MIG: the current mode of a physical GPU, its MIG devices, and for a MIG device its ids and
  // attributes.
  absl::StatusOr<bool> MigEnabled() const;
  absl::StatusOr<std::vector<Device>> MigDevices() const;
  absl::StatusOr<unsigned> GpuInstanceId() const;
  absl::StatusOr<unsigned> ComputeInstanceId() const;
  absl::StatusOr<nvmlDeviceAttributes_t> Attributes() const;

  // The active NVLinks and where each one leads.
  absl::StatusOr<std::vector<NvLink>> ActiveNvLinks() const;
  absl::StatusOr<nvmlGpuTopologyLevel_t> CommonAncestor(const Device& other) const;

 private:
  const Library* library_;
  nvmlDevice_t handle_;
};

}  // namespace gpunode::nvml
