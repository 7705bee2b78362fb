// The body of a Kubernetes watch as it arrives: newline-delimited JSON events
// ({"type": "MODIFIED", "object": {...}}), split across chunks anywhere.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "nlohmann/json_fwd.hpp"

namespace gpunode::kube {

class WatchEventSplitter {
 public:
  // Called for each complete event: `type` is the event's type (ADDED, MODIFIED, DELETED,
  // BOOKMARK, ERROR; "" when missing), `object` its object (an empty object when missing or not
  // an object; for ERROR, the Status). Returning false stops the feeding.
  using OnEvent = std::function<bool(std::string_view type, const nlohmann::json& object)>;

  // A line longer than this ends the watch (overflowed()): a server that never ends a line must
  // not take the node's memory. A node object is a few KiB.
  static constexpr size_t kMaxLine = 16 << 20;

  // Takes `chunk`; false when `on_event` stopped it or the line in progress is too long. Lines
  // that are not JSON are skipped.
  bool Feed(std::string_view chunk, const OnEvent& on_event);
  bool overflowed() const { return overflowed_; }

 private:
  std::string pending_;  // a line not complete yet
  bool overflowed_ = false;
};

}  // namespace gpunode::kube
