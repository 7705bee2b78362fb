// Fuzzes the ld.so.cache parser: any bytes parse or fail, never crash or read out of bounds, and
// what parses keeps its promise (names and paths hold no NUL, as C strings in the file).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cdi/ld_so_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto entries = gpunode::cdi::ParseLdSoCache(
      absl::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!entries.ok()) return 0;
  if (entries->size() > size / 24) std::abort();  // every entry takes 24 bytes of the file
  for (const auto& entry : *entries) {
    if (entry.name.find('\0') != std::string::npos || entry.path.find('\0') != std::string::npos) {
      std::abort();
    }
    (void)entry.Is64BitElf();
  }
  return 0;
}
