// Fuzzes the profile YAML loader (schema, topology matrix, timeline checks): any bytes must load
// or fail with one line, without leaking an exception.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "profile_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto result = gpunode::sim::load_profile(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  if (!result.ok() && result.error().empty()) std::abort();
  return 0;
}
