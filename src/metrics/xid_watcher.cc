#include "metrics/xid_watcher.h"

#include "core/log.h"
#include "nvml/status.h"
#include "nvml/system.h"
#include "spdlog/spdlog.h"

namespace gpunode::metrics {
namespace {

constexpr std::chrono::milliseconds kWaitSlice{250};
// How often to try re-registering GPUs that fell off the bus, in wait slices.
constexpr int kRetryEverySlices = 40;

}  // namespace

XidWatcher::XidWatcher(const nvml::Library& library, core::Env& env)
    : library_(library), env_(env) {}

XidWatcher::~XidWatcher() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

bool XidWatcher::Rebuild() {
  absl::StatusOr<std::unique_ptr<nvml::EventSet>> set = nvml::EventSet::Create(library_);
  if (!set.ok()) {
    spdlog::warn("XID events: {}", set.status().message());
    set_.reset();
    return false;
  }
  absl::StatusOr<unsigned> count = nvml::DeviceCount(library_);
  index_of_.clear();
  unregistered_ = 0;
  std::vector<bool> watched(count.ok() ? *count : 0, false);
  for (unsigned index = 0; index < watched.size(); ++index) {
    absl::StatusOr<nvml::Device> device = nvml::DeviceAt(library_, index);
    absl::Status st =
        device.ok() ? (*set)->Register(*device, nvmlEventTypeXidCriticalError) : device.status();
    if (st.ok()) {
      index_of_[device->handle()] = index;
      watched[index] = true;
    } else {
      // A GPU without XID events is left out for good; a lost one is retried later.
      if (!nvml::IsNotSupported(st)) ++unregistered_;
      spdlog::debug("XID events of GPU {}: {}", index, st.message());
    }
  }
  set_ = std::move(*set);
  std::lock_guard<std::mutex> lock(mu_);
  if (counts_.size() < watched.size()) counts_.resize(watched.size());
  for (size_t i = 0; i < watched.size(); ++i) counts_[i].watched |= watched[i];
  return !index_of_.empty();
}

void XidWatcher::Register() { Rebuild(); }

XidWatcher::WaitResult XidWatcher::WaitOnce(std::chrono::milliseconds timeout) {
  if (set_ == nullptr) return WaitResult::kBroken;
  absl::StatusOr<std::optional<nvml::Event>> event = set_->Wait(timeout);
  if (!event.ok()) {
    // GPU_IS_LOST does not say which GPU; rebuilding finds out and keeps watching the others.
    if (!nvml::IsGpuLost(event.status())) spdlog::warn("XID events: {}", event.status().message());
    return WaitResult::kBroken;
  }
  if (!event->has_value()) return WaitResult::kTimeout;
  if ((*event)->type != nvmlEventTypeXidCriticalError) return WaitResult::kEvent;
  auto it = index_of_.find((*event)->device);
  if (it == index_of_.end()) return WaitResult::kEvent;
  std::lock_guard<std::mutex> lock(mu_);
  XidCounts& counts = counts_[it->second];
  counts.last_xid = (*event)->data;
  ++counts.by_xid[(*event)->data];
  return WaitResult::kEvent;
}

void XidWatcher::Poll() {
  WaitResult result = WaitResult::kEvent;
  while (result == WaitResult::kEvent) result = WaitOnce(std::chrono::milliseconds(0));
  if (result == WaitResult::kBroken) Rebuild();
}

void XidWatcher::Start() {
  thread_ = std::thread([this] { Run(); });
}

void XidWatcher::Run() {
  int slices_since_rebuild = 0;
  while (!stop_) {
    bool broken = WaitOnce(kWaitSlice) == WaitResult::kBroken;
    ++slices_since_rebuild;
    if (broken || (unregistered_ > 0 && slices_since_rebuild >= kRetryEverySlices)) {
      if (!Rebuild()) {
        // Nothing to wait on: do not spin; try again after a slice.
        env_.SleepFor(absl::FromChrono(kWaitSlice));
      }
      slices_since_rebuild = 0;
    }
  }
}

std::vector<XidCounts> XidWatcher::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

}  // namespace gpunode::metrics
