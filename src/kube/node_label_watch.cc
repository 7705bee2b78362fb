#include "kube/node_label_watch.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/json_field.h"
#include "core/status_macros.h"
#include "kube/watch_events.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace gpunode::kube {
namespace {

using nlohmann::json;

// How long the API server keeps one watch open before we read the node afresh; the server may end
// it sooner.
constexpr int kWatchSeconds = 300;
constexpr absl::Duration kMaxBackoff = absl::Seconds(30);
// A watch shorter than this is followed by the retry pause before the node is read again.
constexpr absl::Duration kMinWatch = absl::Seconds(1);

std::optional<std::string> LabelOf(const json& node, const std::string& key) {
  if (!node.is_object()) return std::nullopt;
  auto metadata = node.find("metadata");
  if (metadata == node.end() || !metadata->is_object()) return std::nullopt;
  auto labels = metadata->find("labels");
  if (labels == metadata->end() || !labels->is_object()) return std::nullopt;
  auto value = labels->find(key);
  if (value == labels->end() || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

}  // namespace

absl::StatusOr<std::unique_ptr<NodeLabelWatch>> NodeLabelWatch::Start(
    std::unique_ptr<Client> client, std::string node, std::string key,
    absl::Duration retry_backoff) {
  int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
  std::unique_ptr<NodeLabelWatch> watch(
      new NodeLabelWatch(std::move(client), std::move(node), std::move(key), retry_backoff, fd));
  watch->thread_ = std::thread([w = watch.get()] { w->Run(); });
  return watch;
}

NodeLabelWatch::NodeLabelWatch(std::unique_ptr<Client> client, std::string node, std::string key,
                               absl::Duration retry_backoff, int event_fd)
    : client_(std::move(client)),
      node_(std::move(node)),
      key_(std::move(key)),
      retry_backoff_(retry_backoff),
      event_fd_(event_fd) {}

NodeLabelWatch::~NodeLabelWatch() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_flag_ = true;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NodeLabelWatch::Clear() {
  uint64_t count = 0;
  // Nonblocking: EAGAIN when nothing was signalled, which is fine.
  [[maybe_unused]] ssize_t n = read(event_fd_.get(), &count, sizeof count);
}

std::optional<std::string> NodeLabelWatch::Value() const {
  std::lock_guard lock(mu_);
  return value_;
}

bool NodeLabelWatch::WaitForFirstRead(absl::Duration timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout),
                      [this] { return first_read_ || !last_error_.empty(); });
}

std::string NodeLabelWatch::LastError() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

bool NodeLabelWatch::Pause(absl::Duration d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, absl::ToChronoMilliseconds(d), [this] { return stopping_; });
  return !stopping_;
}

void NodeLabelWatch::Run() {
  absl::Duration backoff = retry_backoff_;
  while (!stop_flag_) {
    absl::Time started = client_->env().Now();
    absl::Status st = ReadAndWatch();
    if (stop_flag_) return;
    if (st.ok()) {
      backoff = retry_backoff_;
      // A watch that ends at once (expired again, a proxy that closes it) is not read again at
      // once: that would be a loop of requests.
      if (client_->env().Now() - started < kMinWatch && !Pause(retry_backoff_)) return;
      continue;
    }
    Failed(st);
    if (!Pause(backoff)) return;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

void NodeLabelWatch::Failed(const absl::Status& status) {
  std::string error(status.message());
  bool repeated;
  {
    std::lock_guard lock(mu_);
    repeated = error == last_error_;
    last_error_ = error;
  }
  cv_.notify_all();
  // Once per distinct error: an API server that is down for an hour is one line, not thousands.
  if (!repeated) {
    spdlog::warn("node {}: cannot follow label {}: {}; keeping the last value and retrying", node_,
                 key_, error);
  }
}

void NodeLabelWatch::Take(const json& node, std::string* resource_version) {
  std::optional<std::string> value = LabelOf(node, key_);
  if (resource_version != nullptr) {
    std::string rv = core::JsonStringAt(node, {"metadata", "resourceVersion"});
    if (!rv.empty()) *resource_version = rv;
  }
  bool changed, first;
  {
    std::lock_guard lock(mu_);
    first = !first_read_;
    changed = value != value_;
    value_ = value;
    first_read_ = true;
    last_error_.clear();
  }
  cv_.notify_all();
  if (first) {
    spdlog::info("node {}: following label {} (now {})", node_, key_,
                 value ? "\"" + *value + "\"" : std::string("unset"));
  }
  if (changed) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(event_fd_.get(), &one, sizeof one);
  }
}

absl::Status NodeLabelWatch::ReadAndWatch() {
  HttpRequest get;
  get.path = absl::StrCat("/api/v1/nodes/", UrlEncode(node_));
  ASSIGN_OR_RETURN(HttpResponse node, client_->SendOnce(get));
  if (node.status < 200 || node.status > 299) return StatusFromResponse(get, node);
  std::string resource_version;
  Take(json::parse(node.body, nullptr, /*allow_exceptions=*/false), &resource_version);

  HttpRequest watch;
  watch.path = absl::StrCat("/api/v1/nodes?fieldSelector=", UrlEncode("metadata.name=" + node_),
                            "&watch=true&resourceVersion=", UrlEncode(resource_version),
                            "&timeoutSeconds=", kWatchSeconds);
  WatchEventSplitter events;
  bool expired = false;
  watch.on_body = [&](std::string_view chunk) {
    return events.Feed(chunk, [&](std::string_view type, const json& object) {
      if (type == "ADDED" || type == "MODIFIED") {
        if (!object.empty()) Take(object, &resource_version);
      } else if (type == "DELETED") {
        Take(json::object(), nullptr);
      } else if (type == "ERROR") {
        // 410 Gone: the resourceVersion is too old; read the node again.
        expired = true;
        return false;
      }
      return true;
    });
  };
  watch.keep_going = [this] { return !stop_flag_; };
  ASSIGN_OR_RETURN(HttpResponse answer, client_->SendOnce(watch));
  if (answer.status < 200 || answer.status > 299) return StatusFromResponse(watch, answer);
  if (events.overflowed()) {
    return absl::ResourceExhaustedError(absl::StrCat("the watch of node ", node_,
                                                     " sent a line longer than ",
                                                     WatchEventSplitter::kMaxLine, " bytes"));
  }
  if (expired) spdlog::debug("node {}: the watch expired; reading the node again", node_);
  return absl::OkStatus();
}

}  // namespace gpunode::kube
