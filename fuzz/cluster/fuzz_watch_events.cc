// Fuzzes the reader of a watch's body, which the device plugin and the labeller take from the API
// server: any bytes, cut into chunks anywhere, give the same events as when they arrive whole,
// and never crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "kube/watch_events.h"
#include "nlohmann/json.hpp"

namespace {

std::vector<std::string> EventsOf(std::string_view body, size_t cut_every) {
  gpunode::kube::WatchEventSplitter splitter;
  std::vector<std::string> seen;
  auto record = [&](std::string_view type, const nlohmann::json& object) {
    seen.push_back(std::string(type) + " " +
                   object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return true;
  };
  for (size_t at = 0; at < body.size(); at += cut_every) {
    if (!splitter.Feed(body.substr(at, cut_every), record)) break;
  }
  return seen;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte chooses where the chunks are cut.
  size_t cut_every = 1 + data[0] % 17;
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (EventsOf(body, cut_every) != EventsOf(body, body.size() + 1)) std::abort();
  return 0;
}
