#include "metrics/gpu_reader.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/log.h"
#include "gpu/mig_profile.h"
#include "nvml/activity.h"
#include "nvml/status.h"
#include "nvml/system.h"
#include "spdlog/spdlog.h"

namespace gpunode::metrics {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// Collects one device's values; remembers whether the GPU turned out to be lost on the way.
class FieldReader {
 public:
  FieldReader(FieldValues* values, uint64_t* errors) : values_(values), errors_(errors) {}

  template <typename T>
  std::optional<T> Get(const absl::StatusOr<T>& value) {
    if (value.ok()) return *value;
    Note(value.status());
    return std::nullopt;
  }

  template <typename T>
  void Set(Field field, const absl::StatusOr<T>& value) {
    if (std::optional<T> v = Get(value)) (*values_)[field] = static_cast<double>(*v);
  }

  void Note(const absl::Status& status) {
    if (nvml::IsGpuLost(status)) {
      lost_ = true;
    } else if (!nvml::IsNotSupported(status)) {
      ++*errors_;
      spdlog::debug("{}", status.message());
    }
  }

  void MarkLost() { lost_ = true; }
  bool lost() const { return lost_; }

 private:
  FieldValues* values_;
  uint64_t* errors_;
  bool lost_ = false;
};

void ReadMemory(FieldReader& reader, FieldValues& values, const nvml::Device& device) {
  if (std::optional<nvml::MemoryInfo> memory = reader.Get(device.Memory())) {
    // dcgm-exporter reports whole MiB.
    values[kFbTotal] = static_cast<double>(memory->total_bytes / kMiB);
    values[kFbUsed] = static_cast<double>(memory->used_bytes / kMiB);
    values[kFbFree] = static_cast<double>(memory->free_bytes / kMiB);
    if (memory->reserved_bytes)
      values[kFbReserved] = static_cast<double>(*memory->reserved_bytes / kMiB);
  }
}

void ReadProcesses(FieldReader& reader, const nvml::Device& device,
                   std::vector<ProcessReading>* out) {
  if (std::optional<std::vector<nvml::ProcessInfo>> processes =
          reader.Get(device.ComputeProcesses())) {
    for (const nvml::ProcessInfo& process : *processes) {
      ProcessReading reading;
      reading.pid = process.pid;
      reading.used_memory_bytes = process.used_memory_bytes;
      out->push_back(std::move(reading));
    }
  }
}

void ReadGpuFields(FieldReader& r, FieldValues& v, const nvml::Device& d) {
  using nvml::ClockType;
  using nvml::EccCounter;
  using nvml::EccErrorType;
  r.Set(kSmClock, d.ClockMhz(ClockType::kSm));
  r.Set(kMemClock, d.ClockMhz(ClockType::kMemory));
  r.Set(kMemoryTemp, d.MemoryTemperatureC());
  r.Set(kGpuTemp, d.TemperatureC());
  if (std::optional<unsigned> mw = r.Get(d.PowerUsageMilliwatts())) v[kPowerUsage] = *mw / 1000.0;
  r.Set(kTotalEnergyConsumption, d.TotalEnergyMillijoules());
  r.Set(kPcieReplayCounter, d.PcieReplayCounter());
  if (std::optional<nvml::UtilizationRates> util = r.Get(d.Utilization())) {
    v[kGpuUtil] = util->gpu_pct;
    v[kMemCopyUtil] = util->memory_pct;
  }
  r.Set(kEncUtil, d.EncoderUtilizationPct());
  r.Set(kDecUtil, d.DecoderUtilizationPct());
  ReadMemory(r, v, d);
  r.Set(kEccSbeVolTotal, d.EccErrors(EccErrorType::kCorrected, EccCounter::kVolatile));
  r.Set(kEccDbeVolTotal, d.EccErrors(EccErrorType::kUncorrected, EccCounter::kVolatile));
  r.Set(kEccSbeAggTotal, d.EccErrors(EccErrorType::kCorrected, EccCounter::kAggregate));
  r.Set(kEccDbeAggTotal, d.EccErrors(EccErrorType::kUncorrected, EccCounter::kAggregate));
  r.Set(kRetiredSbe, d.RetiredPageCount(nvml::RetirementCause::kMultipleSingleBitEcc));
  r.Set(kRetiredDbe, d.RetiredPageCount(nvml::RetirementCause::kDoubleBitEcc));
  if (std::optional<nvml::RemappedRows> rows = r.Get(d.Remapped())) {
    v[kCorrectableRemappedRows] = rows->correctable;
    v[kUncorrectableRemappedRows] = rows->uncorrectable;
    v[kRowRemapFailure] = rows->failure_occurred ? 1 : 0;
    v[kRowRemapPending] = rows->pending ? 1 : 0;
  }
}

// DCGM's profiling fields from NVML's GPM metrics: percentages become ratios 0-1, MiB/s bytes/s.
void SetProfiling(FieldValues& v, const nvml::GpmValues& gpm) {
  using enum nvml::GpmMetric;
  auto ratio = [&](Field field, nvml::GpmMetric metric) {
    if (const std::optional<double>& pct = gpm[static_cast<size_t>(metric)])
      v[field] = std::clamp(*pct / 100, 0.0, 1.0);
  };
  auto rate = [&](Field field, nvml::GpmMetric metric) {
    if (const std::optional<double>& mib = gpm[static_cast<size_t>(metric)])
      v[field] = std::round(std::max(*mib, 0.0) * kMiB);
  };
  ratio(kProfGrEngineActive, kGraphicsUtil);
  ratio(kProfSmActive, kSmUtil);
  ratio(kProfSmOccupancy, kSmOccupancy);
  ratio(kProfPipeTensorActive, kAnyTensorUtil);
  ratio(kProfDramActive, kDramBwUtil);
  ratio(kProfPipeFp64Active, kFp64Util);
  ratio(kProfPipeFp32Active, kFp32Util);
  ratio(kProfPipeFp16Active, kFp16Util);
  rate(kProfPcieTxBytes, kPcieTxMibPerSec);
  rate(kProfPcieRxBytes, kPcieRxMibPerSec);
  rate(kProfNvlinkTxBytes, kNvlinkTxMibPerSec);
  rate(kProfNvlinkRxBytes, kNvlinkRxMibPerSec);
}

// This interval's GPM values of a GPU (or of GPU instance `gpu_instance_id`) into `values`.
void ReadProfiling(FieldReader& reader, GpmReader& gpm, unsigned index, const nvml::Device& gpu,
                   std::optional<unsigned> gpu_instance_id, FieldValues& values) {
  if (std::optional<std::optional<nvml::GpmValues>> read =
          reader.Get(gpm.Read(index, gpu, gpu_instance_id));
      read && *read) {
    SetProfiling(values, **read);
  }
}

// SM utilization of each process since `*seen_us`, the mean of the driver's samples; a process
// without a sample in the window ran nothing then (0).
void ReadProcessUtilization(FieldReader& reader, const nvml::Library& library,
                            const nvml::Device& device, uint64_t* seen_us,
                            std::vector<ProcessReading>& processes) {
  if (processes.empty()) return;
  std::optional<std::vector<nvml::ProcessUtilization>> samples =
      reader.Get(nvml::ProcessUtilizations(library, device, *seen_us));
  if (!samples) return;
  std::map<unsigned, std::pair<double, unsigned>> by_pid;  // sum, count
  for (const nvml::ProcessUtilization& sample : *samples) {
    auto& [sum, count] = by_pid[sample.pid];
    sum += sample.sm_pct;
    ++count;
    *seen_us = std::max(*seen_us, sample.timestamp_us);
  }
  for (ProcessReading& process : processes) {
    auto it = by_pid.find(process.pid);
    process.sm_utilization_pct = it == by_pid.end() ? 0.0 : it->second.first / it->second.second;
  }
}

// DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL over the GPU's active links (asked once per GPU); 0 on a GPU
// without any, as dcgm-exporter writes it there, so dashboards show 0 rather than no data.
void ReadNvLinkTotal(FieldReader& reader, const nvml::Library& library, const nvml::Device& device,
                     std::optional<std::vector<unsigned>>& links, FieldValues& values) {
  if (!links) {
    absl::StatusOr<std::vector<nvml::NvLink>> active = device.ActiveNvLinks();
    if (!active.ok() && !nvml::IsNotSupported(active.status())) {
      reader.Note(active.status());
      return;
    }
    links.emplace();
    for (const nvml::NvLink& link : active.ok() ? *active : std::vector<nvml::NvLink>{})
      links->push_back(link.link);
  }
  if (links->empty()) {
    values[kNvlinkBandwidthTotal] = 0;
    return;
  }
  if (std::optional<uint64_t> kib = reader.Get(nvml::NvLinkDataKib(library, device, *links)))
    values[kNvlinkBandwidthTotal] = static_cast<double>(*kib);
}

// DCGM_FI_DEV_VGPU_LICENSE_STATUS: in a vGPU guest, 1 while the guest's vGPU licence is held;
// 0 on bare metal, in passthrough, on a vGPU host and where the driver does not say, as
// dcgm-exporter writes it on every GPU.
void ReadVgpuLicense(FieldReader& reader, const nvml::Device& device,
                     std::optional<nvmlGpuVirtualizationMode_t>& mode, FieldValues& values) {
  if (!mode) {
    absl::StatusOr<nvmlGpuVirtualizationMode_t> asked = device.VirtualizationMode();
    if (asked.ok()) {
      mode = *asked;
    } else if (nvml::IsNotSupported(asked.status())) {
      mode = NVML_GPU_VIRTUALIZATION_MODE_NONE;
    } else {
      reader.Note(asked.status());
    }
  }
  bool licensed = mode == NVML_GPU_VIRTUALIZATION_MODE_VGPU &&
                  reader.Get(device.VgpuLicensed()).value_or(false);
  values[kVgpuLicenseStatus] = licensed ? 1 : 0;
}

}  // namespace

std::vector<GpuReading> GpuReader::Read(uint64_t* errors) {
  std::vector<GpuReading> out;
  absl::StatusOr<unsigned> counted = nvml::DeviceCount(library_);
  // Without a count, keep reporting the GPUs seen before (as lost) rather than dropping them.
  unsigned count = 0;
  if (counted.ok()) {
    count = *counted;
  } else {
    ++*errors;
    spdlog::warn("{}", counted.status().message());
  }
  if (known_.size() < count) known_.resize(count);
  if (carried_.size() < known_.size()) carried_.resize(known_.size());
  out.reserve(known_.size());
  for (unsigned index = 0; index < known_.size(); ++index) {
    GpuReading gpu;
    gpu.index = index;
    FieldReader reader(&gpu.values, errors);
    absl::StatusOr<nvml::Device> device =
        index < count ? nvml::DeviceAt(library_, index) : absl::NotFoundError("GPU gone");
    absl::StatusOr<std::string> uuid = device.ok() ? device->Uuid() : device.status();
    Identity& known = known_[index];
    if (!uuid.ok()) {
      if (!nvml::IsGpuLost(uuid.status()))
        spdlog::debug("GPU {}: {}", index, uuid.status().message());
      gpu.lost = true;
    } else {
      known.uuid = *uuid;
      if (std::optional<std::string> name = reader.Get(device->Name())) known.name = *name;
      if (std::optional<nvml::PciInfo> pci = reader.Get(device->Pci()))
        known.pci_bus_id = pci->bus_id;
      ReadGpuFields(reader, gpu.values, *device);
      Carried& carried = carried_[index];
      ReadNvLinkTotal(reader, library_, *device, carried.nvlinks, gpu.values);
      ReadVgpuLicense(reader, *device, carried.virtualization_mode, gpu.values);
      gpu.mig_enabled = reader.Get(device->MigEnabled()).value_or(false);
      bool profiled = reader.Get(gpm_.Supported(index, *device)).value_or(false);
      // GPM values per GPU instance: its compute instances share them.
      std::map<unsigned, FieldValues> instance_profiling;
      if (gpu.mig_enabled) {
        uint64_t parent_bytes =
            gpu.values[kFbTotal] ? static_cast<uint64_t>(*gpu.values[kFbTotal]) * kMiB : 0;
        // A MIG-enabled GPU is handed out by instance: its memory and processes are reported
        // per MIG device (dcgm-exporter's GPU-instance entities), not for the whole GPU.
        gpu.values[kFbTotal] = gpu.values[kFbUsed] = gpu.values[kFbFree] = gpu.values[kFbReserved] =
            std::nullopt;
        if (std::optional<std::vector<nvml::Device>> migs = reader.Get(device->MigDevices())) {
          for (const nvml::Device& mig_device : *migs) {
            MigReading mig;
            FieldReader mig_reader(&mig.values, errors);
            mig.uuid = mig_reader.Get(mig_device.Uuid()).value_or("");
            mig.gpu_instance_id = mig_reader.Get(mig_device.GpuInstanceId()).value_or(0);
            mig.compute_instance_id = mig_reader.Get(mig_device.ComputeInstanceId()).value_or(0);
            if (std::optional<nvmlDeviceAttributes_t> attributes =
                    mig_reader.Get(mig_device.Attributes())) {
              mig.profile = gpu::MigProfileName(*attributes, parent_bytes);
            }
            ReadMemory(mig_reader, mig.values, mig_device);
            ReadProcesses(mig_reader, mig_device, &mig.processes);
            if (profiled) {
              auto [it, first] = instance_profiling.try_emplace(mig.gpu_instance_id);
              if (first)
                ReadProfiling(mig_reader, gpm_, index, *device, mig.gpu_instance_id, it->second);
              for (size_t f = kProfGrEngineActive; f <= kProfNvlinkRxBytes; ++f)
                mig.values[f] = it->second[f];
            }
            if (mig_reader.lost()) reader.MarkLost();
            gpu.migs.push_back(std::move(mig));
          }
        }
      } else {
        ReadProcesses(reader, *device, &gpu.processes);
        ReadProcessUtilization(reader, library_, *device, &carried.utilization_seen_us,
                               gpu.processes);
        if (profiled) ReadProfiling(reader, gpm_, index, *device, std::nullopt, gpu.values);
      }
      gpu.lost = reader.lost();
    }
    gpu.uuid = known.uuid;
    gpu.name = known.name;
    gpu.pci_bus_id = known.pci_bus_id;
    if (bool& was_lost = carried_[index].lost; gpu.lost != was_lost) {
      if (gpu.lost) {
        spdlog::warn("GPU {} ({}, {}) fell off the bus: it answers NVML no more", index,
                     known.uuid.empty() ? "uuid unknown" : known.uuid, known.pci_bus_id);
      } else {
        spdlog::info("GPU {} ({}) answers again", index, known.uuid);
      }
      was_lost = gpu.lost;
    }
    if (gpu.lost) {
      gpm_.Forget(index);
      // Whatever was read before the GPU stopped answering is not trustworthy.
      gpu.values = {};
      gpu.migs.clear();
      gpu.processes.clear();
      gpu.mig_enabled = false;
    }
    out.push_back(std::move(gpu));
  }
  return out;
}

bool GpuReader::PrimeProfiling() {
  bool primed = false;
  absl::StatusOr<unsigned> count = nvml::DeviceCount(library_);
  for (unsigned index = 0; count.ok() && index < *count; ++index) {
    absl::StatusOr<nvml::Device> device = nvml::DeviceAt(library_, index);
    if (!device.ok() || !gpm_.Supported(index, *device).value_or(false)) continue;
    if (!device->MigEnabled().value_or(false)) {
      primed = gpm_.Read(index, *device, std::nullopt).ok() || primed;
      continue;
    }
    absl::StatusOr<std::vector<nvml::Device>> migs = device->MigDevices();
    if (!migs.ok()) continue;
    std::set<unsigned> instances;
    for (const nvml::Device& mig : *migs) {
      absl::StatusOr<unsigned> instance = mig.GpuInstanceId();
      if (instance.ok() && instances.insert(*instance).second)
        primed = gpm_.Read(index, *device, *instance).ok() || primed;
    }
  }
  return primed;
}

}  // namespace gpunode::metrics
