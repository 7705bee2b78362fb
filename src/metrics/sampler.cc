#include "metrics/sampler.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "gpu/dra_devices.h"
#include "host/pci.h"
#include "metrics/cgroup.h"
#include "metrics/render.h"
#include "nvml/system.h"
#include "spdlog/spdlog.h"

namespace gpunode::metrics {
namespace {

PodLabels LabelsOf(const DeviceAllocation& allocation) {
  return PodLabels{allocation.namespace_name, allocation.pod, allocation.container,
                   allocation.replica};
}

// dcgm-exporter's labels of a device held through a claim; `mig` for a MIG device.
PodLabels DraLabelsOf(const DeviceAllocation& allocation, const MigReading* mig) {
  PodLabels labels = LabelsOf(allocation);
  const DraClaimDevice& dra = *allocation.dra;
  labels.dra = {{"dra_claim_name", dra.claim_name},
                {"dra_claim_namespace", dra.claim_namespace},
                {"dra_device_name", dra.device},
                {"dra_driver_name", dra.driver}};
  if (mig != nullptr) {
    labels.dra.emplace_back("dra_mig_device_uuid", mig->uuid);
    labels.dra.emplace_back("dra_mig_profile", mig->profile);
  }
  labels.dra.emplace_back("dra_pool_name", dra.pool);
  return labels;
}

bool SamePod(const PodLabels& a, const PodLabels& b) {
  return a.namespace_name == b.namespace_name && a.pod == b.pod && a.container == b.container &&
         a.vgpu == b.vgpu;
}

// On a device shared by replicas (time-slicing, MPS), what each holder's processes use: SM
// utilization and memory summed over them. A holder without processes uses nothing; a figure
// the driver does not give for one of its processes leaves the holder's sum out.
void SplitByHolder(DeviceReading& device) {
  device.shared = std::any_of(device.holders.begin(), device.holders.end(),
                              [](const PodLabels& holder) { return !holder.vgpu.empty(); });
  if (!device.shared) return;
  constexpr double kMiB = 1024.0 * 1024.0;
  // The driver reports utilization for all of a device's processes or for none.
  bool utilization_known =
      device.processes.empty() || device.processes.front().sm_utilization_pct.has_value();
  for (const PodLabels& holder : device.holders) {
    HolderUsage usage{0.0, 0.0};
    if (!utilization_known) usage.gpu_util_pct.reset();
    for (const ProcessReading& process : device.processes) {
      if (process.ownership != Ownership::kPod || !process.pod || !SamePod(*process.pod, holder))
        continue;
      if (usage.gpu_util_pct && process.sm_utilization_pct) {
        *usage.gpu_util_pct = std::min(100.0, *usage.gpu_util_pct + *process.sm_utilization_pct);
      } else {
        usage.gpu_util_pct.reset();
      }
      if (usage.fb_used_mib && process.used_memory_bytes) {
        *usage.fb_used_mib += std::floor(static_cast<double>(*process.used_memory_bytes) / kMiB);
      } else {
        usage.fb_used_mib.reset();
      }
    }
    device.holder_usage.push_back(usage);
  }
}

}  // namespace

Sampler::Sampler(const nvml::Library& library, core::Env& env, XidWatcher* xids,
                 AttributionWatcher* pods, SamplerOptions options)
    : library_(library),
      env_(env),
      xids_(xids),
      pods_(pods),
      options_(std::move(options)),
      reader_(library) {
  // The driver cannot change under a loaded NVML; read its version once.
  if (absl::StatusOr<std::string> version = nvml::DriverVersion(library_); version.ok())
    driver_version_ = *version;
  // A bus that cannot be read (no /sys under --host-root) leaves the driver's count alone.
  if (absl::StatusOr<std::vector<host::PciDevice>> bus = host::ScanNvidiaGpus(env_.host());
      bus.ok())
    pci_gpus_ = static_cast<unsigned>(bus->size());
}

Sampler::~Sampler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Sampler::Attribute(NodeReading& node) {
  std::shared_ptr<const Attribution> attribution = pods_ ? pods_->Current() : nullptr;
  if (attribution == nullptr) return;
  auto classify = [&](std::vector<ProcessReading>& processes,
                      const std::vector<const DeviceAllocation*>& holders,
                      std::set<unsigned>* orphans) {
    for (ProcessReading& process : processes) {
      std::optional<CgroupIdentity> cgroup;
      if (absl::StatusOr<std::string> text =
              env_.host().ReadFile(absl::StrCat("/proc/", process.pid, "/cgroup"));
          text.ok()) {
        cgroup = ParseProcCgroup(*text);
        process.pod_uid = cgroup->pod_uid;
        process.container_id = cgroup->container_id;
      }
      ProcessVerdict verdict = ClassifyProcess(cgroup, holders);
      process.ownership = verdict.ownership;
      if (verdict.allocation != nullptr) process.pod = LabelsOf(*verdict.allocation);
      if (verdict.ownership == Ownership::kOrphan) {
        process.orphan_reason = std::string(verdict.reason);
        orphans->insert(process.pid);
      }
    }
  };
  if (attribution->has_dra()) LearnDraNames(node);
  // The device plugin's holders of a device, then its claims' holders.
  auto holders_of = [&](const std::string& uuid, std::optional<unsigned> index,
                        const MigReading* mig, DeviceReading& device) {
    std::vector<const DeviceAllocation*> holders = attribution->Of(uuid, index);
    if (auto name = dra_names_.find(uuid); attribution->has_dra() && name != dra_names_.end()) {
      for (const DeviceAllocation* holder : attribution->OfDraDevice(name->second))
        holders.push_back(holder);
    }
    for (const DeviceAllocation* holder : holders) {
      device.holders.push_back(holder->dra && options_.dra_labels ? DraLabelsOf(*holder, mig)
                                                                  : LabelsOf(*holder));
    }
    return holders;
  };
  for (GpuReading& gpu : node.gpus) {
    if (gpu.lost) continue;
    std::set<unsigned> orphans;
    if (!gpu.mig_enabled) {
      std::vector<const DeviceAllocation*> holders = holders_of(gpu.uuid, gpu.index, nullptr, gpu);
      classify(gpu.processes, holders, &orphans);
      SplitByHolder(gpu);
    }
    for (MigReading& mig : gpu.migs) {
      std::vector<const DeviceAllocation*> holders = holders_of(mig.uuid, std::nullopt, &mig, mig);
      classify(mig.processes, holders, &orphans);
      SplitByHolder(mig);
    }
    gpu.orphan_processes = static_cast<unsigned>(orphans.size());
  }
}

void Sampler::LearnDraNames(const NodeReading& node) {
  bool complete = true;
  for (const GpuReading& gpu : node.gpus) {
    if (gpu.lost) continue;
    if (!gpu.mig_enabled) complete = complete && dra_names_.contains(gpu.uuid);
    for (const MigReading& mig : gpu.migs) complete = complete && dra_names_.contains(mig.uuid);
  }
  if (complete) return;
  absl::StatusOr<std::map<std::string, std::string>> names = gpu::DraDeviceNames(library_);
  if (!names.ok()) {
    // Once per failure spell, not once a sample.
    if (!dra_names_failed_) {
      spdlog::warn(
          "the DRA devices' names cannot be read ({}): pods holding GPUs through claims "
          "are not attributed",
          std::string(names.status().message()));
    }
    dra_names_failed_ = true;
    return;
  }
  dra_names_failed_ = false;
  dra_names_ = *std::move(names);
}

bool Sampler::PrimeProfiling() {
  std::lock_guard<std::mutex> sampling(sampling_);
  return reader_.PrimeProfiling();
}

void Sampler::SampleNow() {
  std::lock_guard<std::mutex> sampling(sampling_);
  absl::Time start = env_.Now();
  NodeReading node;
  node.hostname = options_.hostname;
  node.driver_version = driver_version_;
  node.gpus = reader_.Read(&nvml_errors_);
  node.physical_gpus = std::max(pci_gpus_, static_cast<unsigned>(node.gpus.size()));
  if (xids_ != nullptr) {
    std::vector<XidCounts> xids = xids_->Snapshot();
    for (GpuReading& gpu : node.gpus) {
      if (gpu.index >= xids.size() || !xids[gpu.index].watched) continue;
      gpu.last_xid = xids[gpu.index].last_xid;
      gpu.xid_counts = xids[gpu.index].by_xid;
    }
  }
  Attribute(node);
  absl::Time end = env_.Now();
  ExporterStats& stats = node.stats;
  stats.sample_duration_seconds = absl::ToDoubleSeconds(end - start);
  stats.last_sample_timestamp_seconds = absl::ToDoubleSeconds(end - absl::UnixEpoch());
  stats.samples_total = ++samples_;
  stats.nvml_errors_total = nvml_errors_;
  if (pods_ != nullptr) {
    stats.pod_resources_errors_total = pods_->errors();
    stats.pod_resources_up = pods_->Current() != nullptr;
  }

  // Render into the buffer of an exposition no scrape holds any more, if there is one.
  std::shared_ptr<std::string> text;
  if (spare_ != nullptr && spare_.use_count() == 1) {
    // use_count() is a relaxed load; the last scrape let go with a releasing decrement, and this
    // fence makes its reads of the buffer (its send) happen before our writes into it.
    std::atomic_thread_fence(std::memory_order_acquire);
    text = std::move(spare_);
  } else {
    text = std::make_shared<std::string>();
  }
  RenderExposition(node, text.get());
  std::lock_guard<std::mutex> lock(mu_);
  // The previous sample becomes the spare once scrapes still sending it let go.
  spare_ = std::const_pointer_cast<std::string>(std::move(latest_));
  latest_ = std::move(text);
  latest_at_ = end;
}

void Sampler::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Sampler::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  absl::Time next = env_.Now() + options_.interval;
  while (!stop_) {
    wake_.wait_for(lock,
                   absl::ToChronoMilliseconds(std::max(next - env_.Now(), absl::ZeroDuration())),
                   [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    SampleNow();
    lock.lock();
    // A steady cadence; a sample that overran its slot moves the schedule instead of piling up.
    next += options_.interval;
    if (absl::Time now = env_.Now(); next < now) next = now + options_.interval;
  }
}

std::shared_ptr<const std::string> Sampler::Latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

absl::Time Sampler::LatestAt() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_at_;
}

absl::Duration Sampler::LatestAge() const { return env_.Now() - LatestAt(); }

}  // namespace gpunode::metrics
