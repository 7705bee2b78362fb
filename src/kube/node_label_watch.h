// Follows one label of one node, as client-go's informer would but for a single object: GET the
// node, then watch it (fieldSelector metadata.name=NAME) from that resourceVersion; when the watch
// ends, expires (410) or fails, GET again, with backoff on errors. The RBAC it needs is `get` and
// `watch` on nodes, nothing more.
//
// Thread-safety: the watch runs on its own thread; every public method may be called from any
// thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/unique_fd.h"
#include "kube/client.h"
#include "nlohmann/json_fwd.hpp"

namespace gpunode::kube {

class NodeLabelWatch {
 public:
  // Starts following label `key` of node `node` through `client`, which the watch thread then
  // owns. `retry_backoff` is the first wait after an error (doubled up to 30 s).
  static absl::StatusOr<std::unique_ptr<NodeLabelWatch>> Start(
      std::unique_ptr<Client> client, std::string node, std::string key,
      absl::Duration retry_backoff = absl::Seconds(1));
  // Stops the thread: a watch in flight ends within about a second.
  ~NodeLabelWatch();
  NodeLabelWatch(const NodeLabelWatch&) = delete;
  NodeLabelWatch& operator=(const NodeLabelWatch&) = delete;

  // Readable (an eventfd) after the label changed: set, removed or given another value. Clear()
  // reads it.
  int fd() const { return event_fd_.get(); }
  void Clear();

  // The label's value as last seen; nullopt while the node has none (or was not read yet).
  std::optional<std::string> Value() const;

  // Waits until the node was read once, or an attempt failed; false after `timeout`. The error of
  // the last failed attempt, if any, is in LastError().
  bool WaitForFirstRead(absl::Duration timeout);
  std::string LastError() const;

 private:
  NodeLabelWatch(std::unique_ptr<Client> client, std::string node, std::string key,
                 absl::Duration retry_backoff, int event_fd);
  void Run();
  // One GET and the watch after it; returns when the watch ends, or the error that ended it.
  absl::Status ReadAndWatch();
  // Takes the label of a node object; signals the eventfd when it changed. Sets
  // `resource_version` (when given) from the object's.
  void Take(const nlohmann::json& node, std::string* resource_version);
  void Failed(const absl::Status& status);
  // Sleeps `d` unless stopping; false when stopping.
  bool Pause(absl::Duration d);

  std::unique_ptr<Client> client_;
  const std::string node_;
  const std::string key_;
  const absl::Duration retry_backoff_;
  const core::UniqueFd event_fd_;  // closed after the destructor joins the thread

  mutable std::mutex mu_;
  std::condition_variable cv_;  // stopping_, first_read_
  bool stopping_ = false;
  bool first_read_ = false;
  std::optional<std::string> value_;
  std::string last_error_;
  std::atomic<bool> stop_flag_{false};  // what the transfer's keep_going reads
  std::thread thread_;
};

}  // namespace gpunode::kube
