// The NVML entry points the simulator exports, with the semantics of libnvidia-ml.so.1.
//
// Including nvml/abi.h under default visibility makes the compiler check every definition here
// against the ABI declaration, and exports exactly these functions from a library otherwise
// built with -fvisibility=hidden.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#pragma GCC visibility push(default)
#include "nvml/abi.h"
#pragma GCC visibility pop

#include "device_call.h"
#include "nvlink_throughput.h"
#include "simulator.h"

using gpunode::sim::GpuModel;
using gpunode::sim::GpuState;
using gpunode::sim::MemoryInfo;
using gpunode::sim::Metric;
using gpunode::sim::MigDevice;
using gpunode::sim::NodeState;
using gpunode::sim::PciAddress;
using gpunode::sim::ProcessInfo;
using gpunode::sim::Simulator;

namespace {

// Resolves `device` and runs fn(node, gpu, mig), where mig is null for a full GPU. Every call on
// a lost GPU, or on a MIG device of one, is GPU_IS_LOST.
template <typename Fn>
nvmlReturn_t on_device(nvmlDevice_t device, Fn&& fn) {
  return gpunode::sim::with_device(
      device, [&](NodeState& node, GpuState& gpu, unsigned, const MigDevice* mig) {
        return fn(node, gpu, mig);
      });
}

// Like on_device for queries about the physical GPU: a MIG device handle is NOT_SUPPORTED.
template <typename Fn>
nvmlReturn_t on_gpu(nvmlDevice_t device, Fn&& fn) {
  return on_device(device,
                   [&](NodeState& node, GpuState& gpu, const MigDevice* mig) -> nvmlReturn_t {
                     if (mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
                     return fn(node, gpu);
                   });
}

template <typename Out, typename Value>
nvmlReturn_t report(const std::optional<Value>& value, Out* out) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!value) return NVML_ERROR_NOT_SUPPORTED;
  *out = static_cast<Out>(*value);
  return NVML_SUCCESS;
}

nvmlReturn_t report_string(const std::optional<std::string>& value, char* buffer, unsigned length) {
  if (buffer == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!value) return NVML_ERROR_NOT_SUPPORTED;
  if (value->size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buffer, value->c_str(), value->size() + 1);
  return NVML_SUCCESS;
}

nvmlEnableState_t enable_state(bool enabled) {
  return enabled ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
}

void fill_pci(const PciAddress& address, nvmlPciInfo_t* pci) {
  std::memset(pci, 0, sizeof *pci);
  std::string legacy = address.bus_id_legacy();
  std::string full = address.bus_id();
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", legacy.c_str());
  std::snprintf(pci->busId, sizeof pci->busId, "%s", full.c_str());
  pci->domain = address.domain;
  pci->bus = address.bus;
  pci->device = address.device;
}

uint64_t free_bytes(const MemoryInfo& memory) {
  if (memory.free_bytes) return *memory.free_bytes;
  uint64_t taken = memory.reserved_bytes + memory.used_bytes;
  return memory.total_bytes > taken ? memory.total_bytes - taken : 0;
}

// The count/array protocol of NVML list queries: too small a count gets the needed count and
// INSUFFICIENT_SIZE; an empty list is SUCCESS with count 0.
template <typename Item, typename Out, typename Convert>
nvmlReturn_t report_list(const std::vector<Item>& items, unsigned* count, Out* out,
                         Convert convert) {
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto needed = static_cast<unsigned>(items.size());
  if (*count < needed) {
    *count = needed;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (needed > 0 && out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < needed; ++i) out[i] = convert(items[i]);
  *count = needed;
  return NVML_SUCCESS;
}

nvmlReturn_t compute_processes(nvmlDevice_t device, unsigned* count, nvmlProcessInfo_t* infos) {
  return on_device(device, [&](NodeState&, GpuState& gpu, const MigDevice* mig) -> nvmlReturn_t {
    std::vector<ProcessInfo> processes;
    for (const ProcessInfo& p : gpu.model().processes) {
      if (mig == nullptr || (p.gpu_instance_id == mig->gpu_instance_id &&
                             p.compute_instance_id == mig->compute_instance_id)) {
        processes.push_back(p);
      }
    }
    return report_list(processes, count, infos, [](const ProcessInfo& p) {
      return nvmlProcessInfo_t{p.pid, p.used_bytes.value_or(kNvmlValueNotAvailable),
                               p.gpu_instance_id, p.compute_instance_id};
    });
  });
}

nvmlReturn_t clock(nvmlDevice_t device, nvmlClockType_t type, unsigned* value, bool max) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) -> nvmlReturn_t {
    if (type < NVML_CLOCK_GRAPHICS || type > NVML_CLOCK_VIDEO) return NVML_ERROR_INVALID_ARGUMENT;
    const auto& clocks = max ? gpu.model().max_clocks : gpu.model().clocks;
    return report(clocks[static_cast<size_t>(type)], value);
  });
}

nvmlReturn_t codec_utilization(nvmlDevice_t device, unsigned* utilization, unsigned* period_us,
                               Metric metric) {
  return on_gpu(device, [&](NodeState& node, GpuState& gpu) -> nvmlReturn_t {
    if (period_us == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t result =
        report(gpu.metric(metric, node.now(NodeState::Clock::now())), utilization);
    // Captures and profiles do not record NVML's sampling period; report one second.
    if (result == NVML_SUCCESS) *period_us = 1'000'000;
    return result;
  });
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2(void) { return Simulator::instance().init(); }
nvmlReturn_t nvmlInit(void) { return Simulator::instance().init(); }
nvmlReturn_t nvmlShutdown(void) { return Simulator::instance().shutdown(); }
const char* nvmlErrorString(nvmlReturn_t result) {
  return Simulator::instance().error_string(result);
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return Simulator::instance().with_node(
      [&](NodeState& node) { return report_string(node.model().driver_version, version, length); });
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return Simulator::instance().with_node(
      [&](NodeState& node) { return report_string(node.model().nvml_version, version, length); });
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  return Simulator::instance().with_node(
      [&](NodeState& node) { return report(node.model().cuda_driver_version, cudaDriverVersion); });
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion_v2(cudaDriverVersion);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  return Simulator::instance().with_node([&](NodeState& node) {
    return report(std::optional<size_t>(node.gpus().size()), deviceCount);
  });
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) {
  return nvmlDeviceGetCount_v2(deviceCount);
}

// Handle lookups keep working for a lost GPU: the handle is bookkeeping the library already has,
// and callers need it to learn, from the next query, that the GPU is lost.
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return Simulator::instance().with_node([&](NodeState& node) -> nvmlReturn_t {
    if (device == nullptr || index >= node.gpus().size()) return NVML_ERROR_INVALID_ARGUMENT;
    *device = node.gpu_handle(index);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  return Simulator::instance().with_node([&](NodeState& node) -> nvmlReturn_t {
    if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned g = 0; g < node.gpus().size(); ++g) {
      const GpuModel& model = node.gpus()[g].model();
      if (model.uuid == uuid) {
        *device = node.gpu_handle(g);
        return NVML_SUCCESS;
      }
      for (const MigDevice& mig : model.mig_devices) {
        if (mig.uuid == uuid) {
          *device = node.mig_handle(g, mig.index);
          return NVML_SUCCESS;
        }
      }
    }
    return NVML_ERROR_NOT_FOUND;
  });
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return Simulator::instance().with_node([&](NodeState& node) -> nvmlReturn_t {
    const nvmlDevice_st* handle = node.resolve(device);
    if (handle == nullptr || index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (handle->mig_position >= 0) return NVML_ERROR_NOT_SUPPORTED;
    *index = handle->gpu;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) {
    return report(gpu.model().minor_number, minorNumber);
  });
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return on_device(device, [&](NodeState&, GpuState& gpu, const MigDevice* mig) {
    return report_string(mig ? std::optional<std::string>(mig->uuid) : gpu.model().uuid, uuid,
                         length);
  });
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return on_device(device, [&](NodeState&, GpuState& gpu, const MigDevice* mig) {
    std::optional<std::string> text = gpu.model().name;
    // A MIG device is called after its parent and profile, as nvidia-smi -L shows it.
    if (mig && text) text = *text + " MIG " + mig->profile;
    return report_string(text, name, length);
  });
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) {
    return report_string(gpu.model().serial, serial, length);
  });
}

// A MIG device answers with its parent's brand. What real NVML answers for a MIG handle is not
// known here (nvml.h says only "for all products"; no capture shows it); NVIDIA's DRA driver never
// asks, and publishes the parent GPU's brand for a MIG device (CommonAttributesMig).
nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t* type) {
  return on_device(device, [&](NodeState&, GpuState& gpu, const MigDevice*) {
    return report(gpu.model().brand, type);
  });
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned int* arch) {
  return on_device(device, [&](NodeState&, GpuState& gpu, const MigDevice*) {
    return report(gpu.model().architecture, arch);
  });
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  return on_device(device, [&](NodeState&, GpuState& gpu, const MigDevice*) -> nvmlReturn_t {
    if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto& capability = gpu.model().compute_capability;
    if (!capability) return NVML_ERROR_NOT_SUPPORTED;
    *major = capability->first;
    *minor = capability->second;
    return NVML_SUCCESS;
  });
}

// A MIG device reports its parent's PCI function: it has no function of its own.
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return on_device(device, [&](NodeState&, GpuState& gpu, const MigDevice*) -> nvmlReturn_t {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const GpuModel& model = gpu.model();
    if (!model.pci) return NVML_ERROR_NOT_SUPPORTED;
    fill_pci(*model.pci, pci);
    pci->pciDeviceId = model.pci_device_id.value_or(0);
    pci->pciSubSystemId = model.pci_subsystem_id.value_or(0);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return nvmlDeviceGetPciInfo_v3(device, pci);
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  return on_gpu(device,
                [&](NodeState&, GpuState& gpu) { return report(gpu.model().numa_node, node); });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return on_device(device, [&](NodeState&, GpuState& gpu, const MigDevice* mig) -> nvmlReturn_t {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const std::optional<MemoryInfo>& info =
        mig ? std::optional<MemoryInfo>(mig->memory) : gpu.model().memory;
    if (!info) return NVML_ERROR_NOT_SUPPORTED;
    // The v1 struct predates `reserved`: its `used` includes it.
    memory->total = info->total_bytes;
    memory->used = info->used_bytes + info->reserved_bytes;
    memory->free = free_bytes(*info);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  return on_device(device, [&](NodeState&, GpuState& gpu, const MigDevice* mig) -> nvmlReturn_t {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != kNvmlMemoryV2Version) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const std::optional<MemoryInfo>& info =
        mig ? std::optional<MemoryInfo>(mig->memory) : gpu.model().memory;
    if (!info) return NVML_ERROR_NOT_SUPPORTED;
    memory->total = info->total_bytes;
    memory->reserved = info->reserved_bytes;
    memory->used = info->used_bytes;
    memory->free = free_bytes(*info);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  return on_gpu(device, [&](NodeState& node, GpuState& gpu) -> nvmlReturn_t {
    if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    auto now = node.now(NodeState::Clock::now());
    auto busy = gpu.metric(Metric::kUtilizationGpu, now);
    auto memory = gpu.metric(Metric::kUtilizationMemory, now);
    if (!busy || !memory) return NVML_ERROR_NOT_SUPPORTED;
    utilization->gpu = *busy;
    utilization->memory = *memory;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs) {
  return codec_utilization(device, utilization, samplingPeriodUs, Metric::kUtilizationEncoder);
}

nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs) {
  return codec_utilization(device, utilization, samplingPeriodUs, Metric::kUtilizationDecoder);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int* temp) {
  return on_gpu(device, [&](NodeState& node, GpuState& gpu) -> nvmlReturn_t {
    if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    return report(gpu.metric(Metric::kTemperature, node.now(NodeState::Clock::now())), temp);
  });
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return on_gpu(device, [&](NodeState& node, GpuState& gpu) {
    return report(gpu.metric(Metric::kPower, node.now(NodeState::Clock::now())), power);
  });
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  return on_gpu(
      device, [&](NodeState&, GpuState& gpu) { return report(gpu.model().power_limit_mw, limit); });
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy) {
  return on_gpu(device, [&](NodeState& node, GpuState& gpu) -> nvmlReturn_t {
    if (energy == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    return report(gpu.energy_mj(node.now(NodeState::Clock::now())), energy);
  });
}

nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int* speed) {
  return on_gpu(device,
                [&](NodeState&, GpuState& gpu) { return report(gpu.model().fan_percent, speed); });
}

nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, nvmlPstates_t* pState) {
  return on_gpu(device,
                [&](NodeState&, GpuState& gpu) { return report(gpu.model().pstate, pState); });
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) {
    return report(gpu.model().pcie_replay_counter, value);
  });
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                    unsigned int* clock_mhz) {
  return clock(device, type, clock_mhz, false);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                       unsigned int* clock_mhz) {
  return clock(device, type, clock_mhz, true);
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t* current,
                                  nvmlEnableState_t* pending) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) -> nvmlReturn_t {
    if (current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const GpuModel& model = gpu.model();
    if (!model.ecc_enabled) return NVML_ERROR_NOT_SUPPORTED;
    *current = enable_state(*model.ecc_enabled);
    *pending = enable_state(model.ecc_pending.value_or(*model.ecc_enabled));
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                         nvmlEccCounterType_t counterType,
                                         unsigned long long* eccCounts) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) -> nvmlReturn_t {
    const auto& ecc = gpu.model().ecc;
    bool corrected = errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED;
    bool is_volatile = counterType == NVML_VOLATILE_ECC;
    if ((!corrected && errorType != NVML_MEMORY_ERROR_TYPE_UNCORRECTED) ||
        (!is_volatile && counterType != NVML_AGGREGATE_ECC)) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    const auto& counter =
        corrected ? (is_volatile ? ecc.corrected_volatile : ecc.corrected_aggregate)
                  : (is_volatile ? ecc.uncorrected_volatile : ecc.uncorrected_aggregate);
    return report(counter, eccCounts);
  });
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                       unsigned int* pageCount, unsigned long long* addresses) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) -> nvmlReturn_t {
    if (cause != NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS &&
        cause != NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    const auto& pages = gpu.model().retired_pages;
    if (pageCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!pages) return NVML_ERROR_NOT_SUPPORTED;
    const auto& list = cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
                           ? pages->double_bit_addresses
                           : pages->single_bit_addresses;
    return report_list(list, pageCount, addresses, [](uint64_t address) { return address; });
  });
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                       unsigned int* uncRows, unsigned int* isPending,
                                       unsigned int* failureOccurred) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) -> nvmlReturn_t {
    if (!corrRows || !uncRows || !isPending || !failureOccurred) return NVML_ERROR_INVALID_ARGUMENT;
    const auto& rows = gpu.model().remapped_rows;
    if (!rows) return NVML_ERROR_NOT_SUPPORTED;
    *corrRows = rows->corrected;
    *uncRows = rows->uncorrected;
    *isPending = rows->pending ? 1 : 0;
    *failureOccurred = rows->failure ? 1 : 0;
    return NVML_SUCCESS;
  });
}

// Only the fields gpunode reads are modelled (abi.h names them); every other field id comes
// back with its own NOT_SUPPORTED, as NVML does for fields a GPU lacks.
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                      nvmlFieldValue_t* values) {
  return on_gpu(device, [&](NodeState& node, GpuState& gpu) -> nvmlReturn_t {
    if (valuesCount < 0 || (valuesCount > 0 && values == nullptr))
      return NVML_ERROR_INVALID_ARGUMENT;
    auto now = node.now(NodeState::Clock::now());
    auto timestamp = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    for (int i = 0; i < valuesCount; ++i) {
      nvmlFieldValue_t& field = values[i];
      field.timestamp = timestamp;
      field.latencyUsec = 0;
      std::optional<unsigned> value;
      if (field.fieldId == NVML_FI_DEV_MEMORY_TEMP) value = gpu.model().memory_temperature_c;
      if (std::optional<uint64_t> kib = gpunode::sim::nvlink_throughput_kib(gpu, now, field)) {
        field.nvmlReturn = NVML_SUCCESS;
        field.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        field.value.ullVal = *kib;
        continue;
      }
      field.nvmlReturn = value ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
      if (value) {
        field.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        field.value.uiVal = *value;
      }
    }
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t* mode) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) -> nvmlReturn_t {
    if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!gpu.model().persistence_mode) return NVML_ERROR_NOT_SUPPORTED;
    *mode = enable_state(*gpu.model().persistence_mode);
    return NVML_SUCCESS;
  });
}

// Every GPU answers its mode: bare metal is NVML_GPU_VIRTUALIZATION_MODE_NONE.
nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t device,
                                             nvmlGpuVirtualizationMode_t* pVirtualMode) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) -> nvmlReturn_t {
    if (pVirtualMode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *pVirtualMode = gpu.model().virtualization_mode;
    return NVML_SUCCESS;
  });
}

// As NVIDIA documents it: success everywhere, isGridLicenseSupported 0 where there is no vGPU
// licensing; a vGPU guest lists the one feature it uses (Virtual Compute Server), enabled, and
// licensed or not.
nvmlReturn_t nvmlDeviceGetGridLicensableFeatures_v4(
    nvmlDevice_t device, nvmlGridLicensableFeatures_t* pGridLicensableFeatures) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) -> nvmlReturn_t {
    if (pGridLicensableFeatures == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *pGridLicensableFeatures = {};
    const std::optional<bool>& licensed = gpu.model().vgpu_licensed;
    if (!licensed) return NVML_SUCCESS;
    pGridLicensableFeatures->isGridLicenseSupported = 1;
    pGridLicensableFeatures->licensableFeaturesCount = 1;
    nvmlGridLicensableFeature_t& feature = pGridLicensableFeatures->gridLicensableFeatures[0];
    feature.featureCode = NVML_GRID_LICENSE_FEATURE_CODE_COMPUTE;
    feature.featureState = *licensed ? 1 : 0;
    feature.featureEnabled = 1;
    std::snprintf(feature.productName, sizeof feature.productName, "%s",
                  "NVIDIA Virtual Compute Server");
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
  return compute_processes(device, infoCount, infos);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
  return compute_processes(device, infoCount, infos);
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                  unsigned int* pendingMode) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) -> nvmlReturn_t {
    if (currentMode == nullptr || pendingMode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const GpuModel& model = gpu.model();
    if (!model.mig_enabled) return NVML_ERROR_NOT_SUPPORTED;
    *currentMode = *model.mig_enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    *pendingMode = model.mig_pending.value_or(*model.mig_enabled) ? NVML_DEVICE_MIG_ENABLE
                                                                  : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!gpu.model().mig_enabled) return NVML_ERROR_NOT_SUPPORTED;
    *count = gpu.model().max_mig_devices;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* migDevice) {
  return on_device(device,
                   [&](NodeState& node, GpuState& gpu, const MigDevice* mig) -> nvmlReturn_t {
                     if (mig != nullptr || migDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
                     const GpuModel& model = gpu.model();
                     if (!model.mig_enabled) return NVML_ERROR_NOT_SUPPORTED;
                     if (index >= model.max_mig_devices) return NVML_ERROR_INVALID_ARGUMENT;
                     nvmlDevice_t handle = node.mig_handle(node.resolve(device)->gpu, index);
                     if (handle == nullptr) return NVML_ERROR_NOT_FOUND;
                     *migDevice = handle;
                     return NVML_SUCCESS;
                   });
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* isMigDevice) {
  return Simulator::instance().with_node([&](NodeState& node) -> nvmlReturn_t {
    const nvmlDevice_st* handle = node.resolve(device);
    if (handle == nullptr || isMigDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *isMigDevice = handle->mig_position >= 0 ? 1 : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                          nvmlDevice_t* device) {
  return on_device(migDevice,
                   [&](NodeState& node, GpuState&, const MigDevice* mig) -> nvmlReturn_t {
                     if (mig == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
                     *device = node.gpu_handle(node.resolve(migDevice)->gpu);
                     return NVML_SUCCESS;
                   });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return on_device(device, [&](NodeState&, GpuState&, const MigDevice* mig) -> nvmlReturn_t {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (mig == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *id = mig->gpu_instance_id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  return on_device(device, [&](NodeState&, GpuState&, const MigDevice* mig) -> nvmlReturn_t {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (mig == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *id = mig->compute_instance_id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t* attributes) {
  return on_device(device, [&](NodeState&, GpuState&, const MigDevice* mig) -> nvmlReturn_t {
    if (attributes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (mig == nullptr)
      return NVML_ERROR_NOT_SUPPORTED;  // the model records attributes of MIG devices only
    *attributes = nvmlDeviceAttributes_t{mig->multiprocessors,
                                         mig->copy_engines,
                                         mig->decoders,
                                         mig->encoders,
                                         mig->jpegs,
                                         mig->ofas,
                                         mig->gpu_instance_slices,
                                         mig->compute_instance_slices,
                                         mig->memory.total_bytes / gpunode::sim::kMiB};
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* isActive) {
  return on_gpu(device, [&](NodeState&, GpuState& gpu) -> nvmlReturn_t {
    if (isActive == nullptr || link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
    if (link >= gpu.model().nvlinks.size()) return NVML_ERROR_NOT_SUPPORTED;
    *isActive = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t* pci) {
  return on_gpu(device, [&](NodeState& node, GpuState& gpu) -> nvmlReturn_t {
    if (pci == nullptr || link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
    if (link >= gpu.model().nvlinks.size()) return NVML_ERROR_NOT_SUPPORTED;
    const PciAddress& remote = gpu.model().nvlinks[link];
    fill_pci(remote, pci);
    // The far end's device id when it is a GPU; NVML leaves the subsystem id out.
    for (GpuState& other : node.gpus()) {
      if (other.model().pci == remote) pci->pciDeviceId = other.model().pci_device_id.value_or(0);
    }
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                 nvmlGpuTopologyLevel_t* pathInfo) {
  return Simulator::instance().with_node([&](NodeState& node) -> nvmlReturn_t {
    const nvmlDevice_st* a = node.resolve(device1);
    const nvmlDevice_st* b = node.resolve(device2);
    if (a == nullptr || b == nullptr || pathInfo == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (a->mig_position >= 0 || b->mig_position >= 0) return NVML_ERROR_NOT_SUPPORTED;
    if (node.gpus()[a->gpu].lost() || node.gpus()[b->gpu].lost()) return NVML_ERROR_GPU_IS_LOST;
    if (a->gpu == b->gpu) {
      *pathInfo = NVML_TOPOLOGY_INTERNAL;
      return NVML_SUCCESS;
    }
    const auto& levels = node.model().pcie_levels;
    if (levels.empty()) return NVML_ERROR_NOT_SUPPORTED;
    *pathInfo = levels[a->gpu][b->gpu];
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  return Simulator::instance().with_node([&](NodeState& node) -> nvmlReturn_t {
    if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *set = node.create_event_set();
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* eventTypes) {
  return on_gpu(device, [&](NodeState& node, GpuState&) -> nvmlReturn_t {
    if (eventTypes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *eventTypes = node.supported_events(node.resolve(device)->gpu);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set) {
  return on_gpu(device, [&](NodeState& node, GpuState&) -> nvmlReturn_t {
    auto target = node.event_set(set);
    if (!target) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned gpu = node.resolve(device)->gpu;
    // Like NVML: asking for any type the GPU cannot deliver fails the whole registration.
    if ((eventTypes & ~node.supported_events(gpu)) != 0) return NVML_ERROR_NOT_SUPPORTED;
    target->registered[gpu] |= eventTypes;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeoutms) {
  return Simulator::instance().wait(set, data, timeoutms);
}

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms) {
  return Simulator::instance().wait(set, data, timeoutms);
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  return Simulator::instance().free_event_set(set);
}

}  // extern "C"
