// Fuzzes the parser of the API server's HTTP/1.1 responses, which the node daemons read off the
// network: any bytes, cut into pieces anywhere, give the same status, body, Retry-After and
// outcome as when they arrive whole, never more body than was sent, and never crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "http_client/response_parser.h"

namespace {

struct Outcome {
  bool ok = true;
  bool done = false;
  int status = 0;
  std::string body;
  std::string retry_after;
  bool operator==(const Outcome&) const = default;
};

Outcome Parse(std::string_view wire, size_t cut_every, bool head_request) {
  gpunode::http_client::ResponseParser parser(head_request);
  Outcome out;
  auto collect = [&](std::string_view data) {
    out.body.append(data);
    return true;
  };
  for (size_t at = 0; at < wire.size() && out.ok; at += cut_every) {
    out.ok = parser.Feed(wire.substr(at, cut_every), collect).ok();
  }
  if (out.ok) out.ok = parser.Finish().ok();
  out.done = parser.done();
  out.status = parser.status();
  out.retry_after = parser.retry_after();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte chooses where the pieces are cut and whether the request was a HEAD.
  size_t cut_every = 1 + (data[0] >> 1) % 23;
  bool head_request = data[0] & 1;
  std::string_view wire(reinterpret_cast<const char*>(data) + 1, size - 1);
  Outcome whole = Parse(wire, wire.size() + 1, head_request);
  if (!(Parse(wire, cut_every, head_request) == whole)) std::abort();
  if (whole.body.size() > wire.size()) std::abort();
  return 0;
}
