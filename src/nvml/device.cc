#include "nvml/device.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "nvml/library.h"
#include "nvml/status.h"

namespace gpunode::nvml {
namespace {

nvmlClockType_t ToNvml(ClockType type) {
  switch (type) {
    case ClockType::kGraphics:
      return NVML_CLOCK_GRAPHICS;
    case ClockType::kSm:
      return NVML_CLOCK_SM;
    case ClockType::kMemory:
      return NVML_CLOCK_MEM;
    case ClockType::kVideo:
      return NVML_CLOCK_VIDEO;
  }
  return NVML_CLOCK_GRAPHICS;
}

// NVML writes NUL-terminated text into a caller buffer; keep what is before the NUL.
std::string FromBuffer(const char* buffer, size_t size) {
  size_t n = 0;
  while (n < size && buffer[n] != '\0') ++n;
  return std::string(buffer, n);
}

}  // namespace

// The words of go-nvlib's Device.GetBrandAsString (NVIDIA/go-nvlib pkg/nvlib/device/device.go),
// which NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu,
// cmd/gpu-kubelet-plugin/nvlib.go, getGpuInfo) publishes as the device attribute `brand`. They are
// go-nvlib's own spelling, not nvidia-smi's "Product Brand" text: NVML_BRAND_NVIDIA is "Nvidia"
// there and "NVIDIA" in nvidia-smi. go-nvlib returns an error for any other value, and the DRA
// driver then fails the GPU.
std::string BrandName(nvmlBrandType_t brand) {
  switch (brand) {
    case NVML_BRAND_UNKNOWN:
      return "Unknown";
    case NVML_BRAND_QUADRO:
      return "Quadro";
    case NVML_BRAND_TESLA:
      return "Tesla";
    case NVML_BRAND_NVS:
      return "NVS";
    case NVML_BRAND_GRID:
      return "Grid";
    case NVML_BRAND_GEFORCE:
      return "GeForce";
    case NVML_BRAND_TITAN:
      return "Titan";
    case NVML_BRAND_NVIDIA_VAPPS:
      return "NvidiaVApps";
    case NVML_BRAND_NVIDIA_VPC:
      return "NvidiaVPC";
    case NVML_BRAND_NVIDIA_VCS:
      return "NvidiaVCS";
    case NVML_BRAND_NVIDIA_VWS:
      return "NvidiaVWS";
    case NVML_BRAND_NVIDIA_CLOUD_GAMING:
      return "NvidiaCloudGaming";
    case NVML_BRAND_QUADRO_RTX:
      return "QuadroRTX";
    case NVML_BRAND_NVIDIA_RTX:
      return "NvidiaRTX";
    case NVML_BRAND_NVIDIA:
      return "Nvidia";
    case NVML_BRAND_GEFORCE_RTX:
      return "GeForceRTX";
    case NVML_BRAND_TITAN_RTX:
      return "TitanRTX";
    default:
      return "";
  }
}

#define GPUNODE_RETURN_SCALAR(type, member, ...)                                         \
  type value{};                                                                          \
  RETURN_IF_ERROR(                                                                       \
      GPUNODE_NVML_CALL(*library_, member, handle_ __VA_OPT__(, ) __VA_ARGS__, &value)); \
  return value

absl::StatusOr<std::string> Device::Uuid() const {
  char buffer[96] = {};
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_uuid, handle_, buffer, sizeof buffer));
  return FromBuffer(buffer, sizeof buffer);
}

absl::StatusOr<std::string> Device::Name() const {
  char buffer[96] = {};
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_name, handle_, buffer, sizeof buffer));
  return FromBuffer(buffer, sizeof buffer);
}

absl::StatusOr<std::string> Device::Serial() const {
  char buffer[NVML_DEVICE_SERIAL_BUFFER_SIZE] = {};
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_serial, handle_, buffer, sizeof buffer));
  return FromBuffer(buffer, sizeof buffer);
}

absl::StatusOr<unsigned> Device::Index() const {
  GPUNODE_RETURN_SCALAR(unsigned, device_get_index);
}
absl::StatusOr<unsigned> Device::MinorNumber() const {
  GPUNODE_RETURN_SCALAR(unsigned, device_get_minor_number);
}
absl::StatusOr<unsigned> Device::Architecture() const {
  GPUNODE_RETURN_SCALAR(unsigned, device_get_architecture);
}

absl::StatusOr<nvmlBrandType_t> Device::Brand() const {
  GPUNODE_RETURN_SCALAR(nvmlBrandType_t, device_get_brand);
}

absl::StatusOr<ComputeCapability> Device::CudaComputeCapability() const {
  ComputeCapability cc;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_cuda_compute_capability, handle_,
                                    &cc.major, &cc.minor));
  return cc;
}

absl::StatusOr<PciInfo> Device::Pci() const {
  nvmlPciInfo_t raw{};
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_pci_info, handle_, &raw));
  PciInfo pci;
  pci.bus_id = FromBuffer(raw.busId, sizeof raw.busId);
  pci.domain = raw.domain;
  pci.bus = raw.bus;
  pci.device = raw.device;
  pci.pci_device_id = raw.pciDeviceId;
  pci.pci_subsystem_id = raw.pciSubSystemId;
  return pci;
}

absl::StatusOr<unsigned> Device::NumaNode() const {
  GPUNODE_RETURN_SCALAR(unsigned, device_get_numa_node_id);
}

absl::StatusOr<MemoryInfo> Device::Memory() const {
  // v2 separates memory the driver reserves from memory processes use, as nvidia-smi shows it;
  // drivers before R510 only have v1, whose `used` includes the reservation.
  nvmlMemory_v2_t v2{};
  v2.version = kNvmlMemoryV2Version;
  absl::Status st = GPUNODE_NVML_CALL(*library_, device_get_memory_info_v2, handle_, &v2);
  if (st.ok()) {
    return MemoryInfo{v2.total, v2.used, v2.free, v2.reserved};
  }
  if (!IsNotSupported(st) && ReturnOf(st) != NVML_ERROR_ARGUMENT_VERSION_MISMATCH) return st;
  nvmlMemory_t v1{};
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_memory_info, handle_, &v1));
  return MemoryInfo{v1.total, v1.used, v1.free, std::nullopt};
}

absl::StatusOr<UtilizationRates> Device::Utilization() const {
  nvmlUtilization_t raw{};
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_utilization_rates, handle_, &raw));
  return UtilizationRates{raw.gpu, raw.memory};
}

absl::StatusOr<unsigned> Device::EncoderUtilizationPct() const {
  unsigned util = 0, period_us = 0;
  RETURN_IF_ERROR(
      GPUNODE_NVML_CALL(*library_, device_get_encoder_utilization, handle_, &util, &period_us));
  return util;
}

absl::StatusOr<unsigned> Device::DecoderUtilizationPct() const {
  unsigned util = 0, period_us = 0;
  RETURN_IF_ERROR(
      GPUNODE_NVML_CALL(*library_, device_get_decoder_utilization, handle_, &util, &period_us));
  return util;
}

absl::StatusOr<unsigned> Device::TemperatureC() const {
  GPUNODE_RETURN_SCALAR(unsigned, device_get_temperature, NVML_TEMPERATURE_GPU);
}
absl::StatusOr<unsigned> Device::PowerUsageMilliwatts() const {
  GPUNODE_RETURN_SCALAR(unsigned, device_get_power_usage);
}
absl::StatusOr<unsigned> Device::PowerLimitMilliwatts() const {
  GPUNODE_RETURN_SCALAR(unsigned, device_get_enforced_power_limit);
}
absl::StatusOr<uint64_t> Device::TotalEnergyMillijoules() const {
  unsigned long long value = 0;
  RETURN_IF_ERROR(
      GPUNODE_NVML_CALL(*library_, device_get_total_energy_consumption, handle_, &value));
  return value;
}
absl::StatusOr<unsigned> Device::FanSpeedPct() const {
  GPUNODE_RETURN_SCALAR(unsigned, device_get_fan_speed);
}
absl::StatusOr<int> Device::PerformanceState() const {
  nvmlPstates_t state = NVML_PSTATE_UNKNOWN;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_performance_state, handle_, &state));
  if (state == NVML_PSTATE_UNKNOWN) {
    return FromReturn(NVML_ERROR_NOT_SUPPORTED, "nvmlDeviceGetPerformanceState", "unknown P-state");
  }
  return state;
}
absl::StatusOr<unsigned> Device::PcieReplayCounter() const {
  GPUNODE_RETURN_SCALAR(unsigned, device_get_pcie_replay_counter);
}
absl::StatusOr<unsigned> Device::ClockMhz(ClockType type) const {
  GPUNODE_RETURN_SCALAR(unsigned, device_get_clock_info, ToNvml(type));
}
absl::StatusOr<unsigned> Device::MaxClockMhz(ClockType type) const {
  GPUNODE_RETURN_SCALAR(unsigned, device_get_max_clock_info, ToNvml(type));
}

absl::StatusOr<bool> Device::EccEnabled() const {
  nvmlEnableState_t current = NVML_FEATURE_DISABLED, pending = NVML_FEATURE_DISABLED;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_ecc_mode, handle_, &current, &pending));
  return current == NVML_FEATURE_ENABLED;
}

absl::StatusOr<uint64_t> Device::EccErrors(EccErrorType type, EccCounter counter) const {
  unsigned long long value = 0;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(
      *library_, device_get_total_ecc_errors, handle_,
      type == EccErrorType::kCorrected ? NVML_MEMORY_ERROR_TYPE_CORRECTED
                                       : NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
      counter == EccCounter::kVolatile ? NVML_VOLATILE_ECC : NVML_AGGREGATE_ECC, &value));
  return value;
}

absl::StatusOr<unsigned> Device::RetiredPageCount() const {
  ASSIGN_OR_RETURN(unsigned single_bit, RetiredPageCount(RetirementCause::kMultipleSingleBitEcc));
  ASSIGN_OR_RETURN(unsigned double_bit, RetiredPageCount(RetirementCause::kDoubleBitEcc));
  return single_bit + double_bit;
}

absl::StatusOr<unsigned> Device::RetiredPageCount(RetirementCause cause) const {
  unsigned count = 0;  // a count of 0 asks only for the number of pages
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_retired_pages, handle_,
                                    cause == RetirementCause::kDoubleBitEcc
                                        ? NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
                                        : NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                                    &count, static_cast<unsigned long long*>(nullptr)));
  return count;
}

absl::StatusOr<unsigned> Device::MemoryTemperatureC() const {
  nvmlFieldValue_t field{};
  field.fieldId = NVML_FI_DEV_MEMORY_TEMP;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_field_values, handle_, 1, &field));
  // The call succeeds as a whole while each field carries its own result.
  if (field.nvmlReturn != NVML_SUCCESS) {
    return FromReturn(field.nvmlReturn, "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)",
                      library_->ErrorString(field.nvmlReturn));
  }
  switch (field.valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return field.value.uiVal;
    case NVML_VALUE_TYPE_SIGNED_INT:
      if (field.value.siVal >= 0) return static_cast<unsigned>(field.value.siVal);
      break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return static_cast<unsigned>(field.value.ullVal);
    default:
      break;
  }
  return FromReturn(NVML_ERROR_NOT_SUPPORTED, "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)",
                    "unexpected value type");
}

absl::StatusOr<RemappedRows> Device::Remapped() const {
  unsigned corr = 0, unc = 0, pending = 0, failure = 0;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_remapped_rows, handle_, &corr, &unc,
                                    &pending, &failure));
  return RemappedRows{corr, unc, pending != 0, failure != 0};
}

absl::StatusOr<bool> Device::PersistenceModeEnabled() const {
  nvmlEnableState_t mode = NVML_FEATURE_DISABLED;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_persistence_mode, handle_, &mode));
  return mode == NVML_FEATURE_ENABLED;
}

absl::StatusOr<nvmlGpuVirtualizationMode_t> Device::VirtualizationMode() const {
  nvmlGpuVirtualizationMode_t mode = NVML_GPU_VIRTUALIZATION_MODE_NONE;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_virtualization_mode, handle_, &mode));
  return mode;
}

absl::StatusOr<bool> Device::VgpuLicensed() const {
  nvmlGridLicensableFeatures_t features{};
  RETURN_IF_ERROR(
      GPUNODE_NVML_CALL(*library_, device_get_grid_licensable_features, handle_, &features));
  if (features.isGridLicenseSupported == 0) {
    return FromReturn(NVML_ERROR_NOT_SUPPORTED, "nvmlDeviceGetGridLicensableFeatures_v4",
                      "vGPU software licensing is not supported here");
  }
  unsigned count = std::min(features.licensableFeaturesCount, NVML_GRID_LICENSE_FEATURE_MAX_COUNT);
  for (unsigned i = 0; i < count; ++i) {
    const nvmlGridLicensableFeature_t& feature = features.gridLicensableFeatures[i];
    if (feature.featureEnabled != 0) return feature.featureState != 0;
  }
  return false;
}

absl::StatusOr<nvmlComputeMode_t> Device::ComputeMode() const {
  nvmlComputeMode_t mode = NVML_COMPUTEMODE_DEFAULT;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_compute_mode, handle_, &mode));
  return mode;
}

absl::Status Device::SetComputeMode(nvmlComputeMode_t mode) const {
  return GPUNODE_NVML_CALL(*library_, device_set_compute_mode, handle_, mode);
}

absl::StatusOr<std::vector<ProcessInfo>> Device::ComputeProcesses() const {
  // Ask for the count first; processes may start between the calls, so leave slack and retry.
  std::vector<nvmlProcessInfo_t> raw;
  unsigned count = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    raw.resize(count);
    unsigned capacity = count;
    absl::Status st = GPUNODE_NVML_CALL(*library_, device_get_compute_running_processes, handle_,
                                        &capacity, raw.empty() ? nullptr : raw.data());
    if (st.ok()) {
      raw.resize(capacity);
      std::vector<ProcessInfo> out;
      out.reserve(raw.size());
      for (const nvmlProcessInfo_t& p : raw) {
        ProcessInfo info;
        info.pid = p.pid;
        if (p.usedGpuMemory != kNvmlValueNotAvailable) info.used_memory_bytes = p.usedGpuMemory;
        if (p.gpuInstanceId != kNvmlNoInstanceId) info.gpu_instance_id = p.gpuInstanceId;
        if (p.computeInstanceId != kNvmlNoInstanceId)
          info.compute_instance_id = p.computeInstanceId;
        out.push_back(info);
      }
      return out;
    }
    if (ReturnOf(st) != NVML_ERROR_INSUFFICIENT_SIZE) return st;
    count = capacity + 8;
  }
  return FromReturn(NVML_ERROR_INSUFFICIENT_SIZE, "nvmlDeviceGetComputeRunningProcesses",
                    "the process list kept growing");
}

absl::StatusOr<bool> Device::MigEnabled() const {
  unsigned current = 0, pending = 0;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_mig_mode, handle_, &current, &pending));
  return current == NVML_DEVICE_MIG_ENABLE;
}

absl::StatusOr<std::vector<Device>> Device::MigDevices() const {
  unsigned max_count = 0;
  RETURN_IF_ERROR(
      GPUNODE_NVML_CALL(*library_, device_get_max_mig_device_count, handle_, &max_count));
  std::vector<Device> out;
  for (unsigned i = 0; i < max_count; ++i) {
    nvmlDevice_t mig = nullptr;
    absl::Status st =
        GPUNODE_NVML_CALL(*library_, device_get_mig_device_handle_by_index, handle_, i, &mig);
    // Indexes without an instance behind them are NOT_FOUND: MIG slots can be sparse.
    if (ReturnOf(st) == NVML_ERROR_NOT_FOUND) continue;
    RETURN_IF_ERROR(st);
    out.emplace_back(library_, mig);
  }
  return out;
}

absl::StatusOr<unsigned> Device::GpuInstanceId() const {
  GPUNODE_RETURN_SCALAR(unsigned, device_get_gpu_instance_id);
}
absl::StatusOr<unsigned> Device::ComputeInstanceId() const {
  GPUNODE_RETURN_SCALAR(unsigned, device_get_compute_instance_id);
}
absl::StatusOr<nvmlDeviceAttributes_t> Device::Attributes() const {
  GPUNODE_RETURN_SCALAR(nvmlDeviceAttributes_t, device_get_attributes);
}

absl::StatusOr<std::vector<NvLink>> Device::ActiveNvLinks() const {
  std::vector<NvLink> out;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    absl::Status st = GPUNODE_NVML_CALL(*library_, device_get_nvlink_state, handle_, link, &active);
    // Links past the last one the GPU has answer NOT_SUPPORTED or INVALID_ARGUMENT.
    if (IsNotSupported(st) || ReturnOf(st) == NVML_ERROR_INVALID_ARGUMENT) continue;
    RETURN_IF_ERROR(st);
    if (active != NVML_FEATURE_ENABLED) continue;
    nvmlPciInfo_t remote{};
    RETURN_IF_ERROR(
        GPUNODE_NVML_CALL(*library_, device_get_nvlink_remote_pci_info, handle_, link, &remote));
    out.push_back(NvLink{link, FromBuffer(remote.busId, sizeof remote.busId)});
  }
  return out;
}

absl::StatusOr<nvmlGpuTopologyLevel_t> Device::CommonAncestor(const Device& other) const {
  GPUNODE_RETURN_SCALAR(nvmlGpuTopologyLevel_t, device_get_topology_common_ancestor, other.handle_);
}

#undef GPUNODE_RETURN_SCALAR

}  // namespace gpunode::nvml
