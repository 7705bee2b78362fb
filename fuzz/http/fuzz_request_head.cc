// Any bytes as the start of a connection to the plain HTTP server: the head parser must answer
// parsed, incomplete, bad or too large without reading past its input, and a parsed head's views
// must lie within the bytes it was given, ending where the head does (the path "/" that an
// absolute target without a path stands for excepted).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "http/request_head.h"

namespace {

bool Within(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using gpunode::http::HeadOutcome;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (size_t limit : {size_t{64}, size_t{8192}}) {
    gpunode::http::HeadResult result = gpunode::http::ParseRequestHead(bytes, limit);
    if (result.outcome != HeadOutcome::kParsed) continue;
    const gpunode::http::RequestHead& head = result.head;
    std::string_view parsed = bytes.substr(0, head.head_bytes);
    if (head.head_bytes > limit || !Within(head.method, parsed) ||
        !(Within(head.path, parsed) || head.path == "/") || head.method.empty() ||
        !head.path.starts_with('/') || (head.chunked && head.content_length)) {
      std::abort();
    }
  }
  return 0;
}
