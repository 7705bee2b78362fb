#include "metrics/attribution_watcher.h"

#include "core/log.h"
#include "host/device_checkpoint.h"
#include "spdlog/spdlog.h"

namespace gpunode::metrics {

AttributionWatcher::AttributionWatcher(core::Env& env, AttributionOptions options)
    : env_(env), options_(std::move(options)), client_(env.host().Resolve(options_.socket)) {}

AttributionWatcher::~AttributionWatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

absl::Status AttributionWatcher::Refresh() {
  absl::StatusOr<std::vector<ListedDevices>> listed = client_.List(options_.timeout);
  if (!listed.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++errors_;
    // The first failure is worth a warning (no kubelet socket: no pod labels, no zombie count);
    // repeating it every second is not.
    if (!logged_failure_) spdlog::warn("{}", listed.status().message());
    logged_failure_ = true;
    return listed.status();
  }
  // The checkpoint only adds pod UIDs; without it attribution falls back to the device alone.
  std::vector<host::CheckpointAllocation> checkpoint;
  if (absl::StatusOr<std::string> text = env_.host().ReadFile(options_.checkpoint); text.ok()) {
    if (absl::StatusOr<host::DeviceCheckpoint> parsed = host::ParseDeviceCheckpoint(*text);
        parsed.ok()) {
      checkpoint = std::move(parsed->allocations);
    } else {
      spdlog::debug("{}: {}", options_.checkpoint, parsed.status().message());
    }
  } else {
    spdlog::debug("{}", text.status().message());
  }
  auto attribution = std::make_shared<const Attribution>(*listed, checkpoint);
  std::lock_guard<std::mutex> lock(mu_);
  if (logged_failure_) spdlog::info("PodResources on {} answers again", client_.socket_path());
  logged_failure_ = false;
  current_ = std::move(attribution);
  current_at_ = env_.Now();
  return absl::OkStatus();
}

void AttributionWatcher::Start() {
  thread_ = std::thread([this] { Run(); });
}

void AttributionWatcher::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, absl::ToChronoMilliseconds(options_.refresh),
                         [this] { return stop_; })) {
    lock.unlock();
    Refresh().IgnoreError();
    lock.lock();
  }
}

std::shared_ptr<const Attribution> AttributionWatcher::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (env_.Now() - current_at_ > options_.stale_after) return nullptr;
  return current_;
}

uint64_t AttributionWatcher::errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

}  // namespace gpunode::metrics
