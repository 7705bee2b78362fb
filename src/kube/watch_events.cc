#include "kube/watch_events.h"

#include "core/json_field.h"
#include "nlohmann/json.hpp"

namespace gpunode::kube {

bool WatchEventSplitter::Feed(std::string_view chunk, const OnEvent& on_event) {
  if (overflowed_) return false;
  size_t start = 0;
  for (size_t end = chunk.find('\n'); end != std::string_view::npos;
       start = end + 1, end = chunk.find('\n', start)) {
    std::string_view line = chunk.substr(start, end - start);
    if (!pending_.empty()) {
      pending_.append(line);
      line = pending_;
    }
    nlohmann::json event = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    bool go_on = true;
    if (event.is_object()) {
      auto object = event.find("object");
      static const nlohmann::json kEmpty = nlohmann::json::object();
      go_on = on_event(core::JsonString(event, "type"),
                       object != event.end() && object->is_object() ? *object : kEmpty);
    }
    pending_.clear();
    if (!go_on) return false;
  }
  if (pending_.size() + (chunk.size() - start) > kMaxLine) {
    overflowed_ = true;
    pending_.clear();
    return false;
  }
  pending_.append(chunk.substr(start));
  return true;
}

}  // namespace gpunode::kube
