#include "metrics/render.h"

#include <cmath>
#include <functional>
#include <optional>

#include "absl/strings/str_cat.h"
#include "gpu/xid_catalog.h"

namespace gpunode::metrics {
namespace {

// The label lists of one device: one per pod that holds it (or one without pod labels).
struct DeviceSeries {
  std::string base;                 // identity labels, as dcgm-exporter orders them
  std::vector<std::string> series;  // base + pod labels, one per holder
};

// dcgm-exporter's order: gpu, UUID, pci_bus_id, device, modelName, [GPU_I_PROFILE, GPU_I_ID],
// Hostname, label-type fields (DCGM_FI_DRIVER_VERSION), then pod attributes sorted by name.
std::string IdentityLabels(const NodeReading& node, const GpuReading& gpu, const MigReading* mig) {
  std::string labels;
  std::string index = absl::StrCat(gpu.index);
  AppendLabel("gpu", index, &labels);
  AppendLabel("UUID", gpu.uuid, &labels);
  AppendLabel("pci_bus_id", gpu.pci_bus_id, &labels);
  AppendLabel("device", absl::StrCat("nvidia", gpu.index), &labels);
  AppendLabel("modelName", gpu.name, &labels);
  if (mig != nullptr) {
    AppendLabel("GPU_I_PROFILE", mig->profile, &labels);
    AppendLabel("GPU_I_ID", absl::StrCat(mig->gpu_instance_id), &labels);
  }
  AppendLabel("Hostname", node.hostname, &labels);
  if (!node.driver_version.empty())
    AppendLabel("DCGM_FI_DRIVER_VERSION", node.driver_version, &labels);
  return labels;
}

// dcgm-exporter 4.x's labels of DCGM_FI_DEV_XID_ERRORS: the XID and NVIDIA's text for it.
void AppendXidAttributes(uint64_t xid, std::string* labels) {
  AppendLabel("err_code", absl::StrCat(xid), labels);
  AppendLabel("err_msg", gpu::XidErrorMessage(xid), labels);
}

// Attributes go sorted by name, as dcgm-exporter writes them: the XID's between container and
// namespace.
void AppendPodLabels(const PodLabels& pod, std::string* labels,
                     std::optional<uint64_t> xid = std::nullopt) {
  AppendLabel("container", pod.container, labels);
  for (const auto& [name, value] : pod.dra) AppendLabel(name, value, labels);
  if (xid) AppendXidAttributes(*xid, labels);
  AppendLabel("namespace", pod.namespace_name, labels);
  AppendLabel("pod", pod.pod, labels);
  if (!pod.vgpu.empty()) AppendLabel("vgpu", pod.vgpu, labels);
}

DeviceSeries SeriesOf(std::string base, const std::vector<PodLabels>& holders) {
  DeviceSeries out{std::move(base), {}};
  if (holders.empty()) {
    out.series.push_back(out.base);
    return out;
  }
  for (const PodLabels& holder : holders) {
    std::string labels = out.base;
    AppendPodLabels(holder, &labels);
    out.series.push_back(std::move(labels));
  }
  return out;
}

// Writes a family's header before its first sample only, so families without samples vanish.
class LazyFamily {
 public:
  LazyFamily(ExpositionWriter& writer, std::string_view name, MetricType type,
             std::string_view help)
      : writer_(writer), name_(name), type_(type), help_(help) {}

  template <typename T>
  void Sample(std::string_view labels, std::string_view extra, T value) {
    if (!started_) writer_.Family(name_, type_, help_);
    started_ = true;
    writer_.Sample(name_, labels, extra, value);
  }

 private:
  ExpositionWriter& writer_;
  std::string_view name_;
  MetricType type_;
  std::string_view help_;
  bool started_ = false;
};

void WriteField(LazyFamily& family, const FieldSpec& spec, double value,
                const std::vector<std::string>& series) {
  for (const std::string& labels : series) {
    if (spec.fractional) {
      family.Sample(labels, "", value);
    } else {
      family.Sample(labels, "", static_cast<uint64_t>(value));
    }
  }
}

// A device's value of field `f`: on a shared device, GPU_UTIL and FB_USED go once for the whole
// device with its own labels and once per holder with what its processes use, and FB_TOTAL goes
// for the whole device too so that used / total still divides; everything else goes once per
// holder.
void WriteDeviceField(LazyFamily& family, const FieldSpec& spec, size_t f,
                      const DeviceReading& device, const DeviceSeries& series) {
  if (!device.values[f]) return;
  bool per_pod = device.shared && (f == kGpuUtil || f == kFbUsed) &&
                 device.holder_usage.size() == series.series.size();
  if (device.shared && (per_pod || f == kFbTotal))
    family.Sample(series.base, "", static_cast<uint64_t>(*device.values[f]));
  if (!per_pod) {
    WriteField(family, spec, *device.values[f], series.series);
    return;
  }
  for (size_t h = 0; h < device.holder_usage.size(); ++h) {
    const HolderUsage& usage = device.holder_usage[h];
    const std::optional<double>& value = f == kGpuUtil ? usage.gpu_util_pct : usage.fb_used_mib;
    if (value) family.Sample(series.series[h], "", static_cast<uint64_t>(std::llround(*value)));
  }
}

// The labels of one process's series after the device's: pid and its pod, or why it is an orphan.
void ProcessLabels(const ProcessReading& process, std::string* extra) {
  extra->clear();
  AppendLabel("pid", absl::StrCat(process.pid), extra);
  if (process.ownership == Ownership::kPod && process.pod) {
    AppendPodLabels(*process.pod, extra);
  } else if (process.ownership == Ownership::kOrphan) {
    AppendLabel("orphan", "true", extra);
    AppendLabel("reason", process.orphan_reason, extra);
    if (!process.pod_uid.empty()) AppendLabel("pod_uid", process.pod_uid, extra);
    if (!process.container_id.empty()) AppendLabel("container_id", process.container_id, extra);
  }
}

void WriteProcess(LazyFamily& family, const std::string& base, const ProcessReading& process,
                  std::string* extra) {
  if (!process.used_memory_bytes) return;
  ProcessLabels(process, extra);
  family.Sample(base, *extra, *process.used_memory_bytes);
}

void WriteProcessUtilization(LazyFamily& family, const std::string& base,
                             const ProcessReading& process, std::string* extra) {
  if (!process.sm_utilization_pct) return;
  ProcessLabels(process, extra);
  family.Sample(base, *extra, *process.sm_utilization_pct / 100);
}

}  // namespace

void RenderExposition(const NodeReading& node, std::string* out) {
  out->clear();
  ExpositionWriter writer(out);

  // Label lists are built once per device and shared by all its families.
  std::vector<DeviceSeries> gpu_series(node.gpus.size());
  std::vector<std::vector<DeviceSeries>> mig_series(node.gpus.size());
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuReading& gpu = node.gpus[i];
    // A MIG-enabled GPU is never handed out whole: its own series carry no pod.
    gpu_series[i] = SeriesOf(IdentityLabels(node, gpu, nullptr),
                             gpu.mig_enabled ? std::vector<PodLabels>{} : gpu.holders);
    for (const MigReading& mig : gpu.migs)
      mig_series[i].push_back(SeriesOf(IdentityLabels(node, gpu, &mig), mig.holders));
  }

  const std::array<FieldSpec, kFieldCount>& specs = FieldSpecs();
  for (size_t f = 0; f < kFieldCount; ++f) {
    const FieldSpec& spec = specs[f];
    LazyFamily family(writer, spec.name, spec.type, spec.help);
    for (size_t i = 0; i < node.gpus.size(); ++i) {
      const GpuReading& gpu = node.gpus[i];
      if (gpu.lost) continue;
      WriteDeviceField(family, spec, f, gpu, gpu_series[i]);
      for (size_t m = 0; m < gpu.migs.size(); ++m)
        WriteDeviceField(family, spec, f, gpu.migs[m], mig_series[i][m]);
    }
    // dcgm-exporter lists the XID gauge after the utilizations, before the framebuffer.
    if (f == kDecUtil) {
      LazyFamily xid(writer, "DCGM_FI_DEV_XID_ERRORS", MetricType::kGauge,
                     "Value of the last XID error encountered.");
      std::string labels;
      for (size_t i = 0; i < node.gpus.size(); ++i) {
        const GpuReading& gpu = node.gpus[i];
        if (gpu.lost || !gpu.last_xid) continue;
        if (gpu.mig_enabled || gpu.holders.empty()) {
          labels = gpu_series[i].base;
          AppendXidAttributes(*gpu.last_xid, &labels);
          xid.Sample(labels, "", *gpu.last_xid);
          continue;
        }
        for (const PodLabels& holder : gpu.holders) {
          labels = gpu_series[i].base;
          AppendPodLabels(holder, &labels, gpu.last_xid);
          xid.Sample(labels, "", *gpu.last_xid);
        }
      }
    }
  }

  LazyFamily health(
      writer, "gpunode_gpu_health", MetricType::kGauge,
      "1 when the GPU answers NVML, 0 when it fell off the bus or cannot be reached.");
  for (size_t i = 0; i < node.gpus.size(); ++i)
    health.Sample(gpu_series[i].base, "", uint64_t{node.gpus[i].lost ? 0u : 1u});

  std::string extra;
  LazyFamily xids(writer, "gpunode_xid_errors_total", MetricType::kCounter,
                  "XID errors the GPU reported since the exporter started, by XID.");
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    for (const auto& [xid, count] : node.gpus[i].xid_counts) {
      extra.clear();
      AppendLabel("xid", absl::StrCat(xid), &extra);
      xids.Sample(gpu_series[i].base, extra, count);
    }
  }

  LazyFamily processes(writer, "gpunode_gpu_process_used_memory_bytes", MetricType::kGauge,
                       "GPU memory used by a compute process, with its pod or, for a process "
                       "that belongs to no active pod holding the GPU, orphan=\"true\".");
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuReading& gpu = node.gpus[i];
    if (gpu.lost) continue;
    for (const ProcessReading& process : gpu.processes)
      WriteProcess(processes, gpu_series[i].base, process, &extra);
    for (size_t m = 0; m < gpu.migs.size(); ++m) {
      for (const ProcessReading& process : gpu.migs[m].processes)
        WriteProcess(processes, mig_series[i][m].base, process, &extra);
    }
  }

  LazyFamily utilization(writer, "gpunode_gpu_process_utilization_ratio", MetricType::kGauge,
                         "SM utilization of a compute process over the last sampling interval "
                         "(0-1), with its pod or orphan=\"true\" as for its memory.");
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuReading& gpu = node.gpus[i];
    if (gpu.lost) continue;
    for (const ProcessReading& process : gpu.processes)
      WriteProcessUtilization(utilization, gpu_series[i].base, process, &extra);
  }

  LazyFamily orphans(writer, "gpunode_orphan_gpu_processes", MetricType::kGauge,
                     "Compute processes on the GPU that belong to no active pod holding it.");
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    if (node.gpus[i].orphan_processes)
      orphans.Sample(gpu_series[i].base, "", uint64_t{*node.gpus[i].orphan_processes});
  }

  writer.Family("gpunode_physical_gpus", MetricType::kGauge,
                "NVIDIA GPUs the machine has: the driver's count (lost GPUs included) or the "
                "NVIDIA controllers on the PCI bus, whichever is larger.");
  std::string hostname;
  AppendLabel("Hostname", node.hostname, &hostname);
  writer.Sample("gpunode_physical_gpus", hostname, "", uint64_t{node.physical_gpus});

  const ExporterStats& stats = node.stats;
  writer.Family("gpunode_exporter_sample_duration_seconds", MetricType::kGauge,
                "Time the last sample of NVML, the kubelet and /proc took.");
  writer.Sample("gpunode_exporter_sample_duration_seconds", "", "", stats.sample_duration_seconds);
  writer.Family("gpunode_exporter_last_sample_timestamp_seconds", MetricType::kGauge,
                "Unix time of the last sample.");
  writer.Sample("gpunode_exporter_last_sample_timestamp_seconds", "", "",
                stats.last_sample_timestamp_seconds);
  writer.Family("gpunode_exporter_samples_total", MetricType::kCounter, "Samples taken.");
  writer.Sample("gpunode_exporter_samples_total", "", "", stats.samples_total);
  writer.Family("gpunode_exporter_sample_errors_total", MetricType::kCounter,
                "Failed queries while sampling, by source (NVML errors other than "
                "\"not supported\"; PodResources List failures).");
  writer.Sample("gpunode_exporter_sample_errors_total", "source=\"nvml\",", "",
                stats.nvml_errors_total);
  writer.Sample("gpunode_exporter_sample_errors_total", "source=\"pod_resources\",", "",
                stats.pod_resources_errors_total);
  if (stats.pod_resources_up) {
    writer.Family("gpunode_pod_resources_up", MetricType::kGauge,
                  "1 when the kubelet's PodResources API answered recently enough to attribute "
                  "GPUs and processes to pods.");
    writer.Sample("gpunode_pod_resources_up", "", "", uint64_t{*stats.pod_resources_up ? 1u : 0u});
  }
}

}  // namespace gpunode::metrics
