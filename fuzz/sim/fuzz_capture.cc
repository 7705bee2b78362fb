// Fuzzes the `nvidia-smi -q -x` capture loader: any bytes must load or fail with one line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "capture_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto result = gpunode::sim::load_capture(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.xml");
  if (!result.ok() && (result.error().empty() || result.error().find('\n') != std::string::npos))
    std::abort();
  return 0;
}
