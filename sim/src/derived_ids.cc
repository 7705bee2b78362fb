#include "derived_ids.h"

#include <cstdint>
#include <cstdio>

namespace gpunode::sim {
namespace {

// 64-bit FNV-1a: small, stable across platforms and compilers, good enough to spread seeds.
uint64_t fnv1a(std::string_view text, uint64_t basis) {
  uint64_t hash = basis;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace

std::string derived_uuid(std::string_view prefix, std::string_view seed) {
  uint64_t high = fnv1a(seed, 0xcbf29ce484222325ULL);
  uint64_t low = fnv1a(seed, high ^ 0x9e3779b97f4a7c15ULL);
  char text[64];
  std::snprintf(text, sizeof text, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(high >> 32),
                static_cast<unsigned>((high >> 16) & 0xFFFF), static_cast<unsigned>(high & 0xFFFF),
                static_cast<unsigned>(low >> 48),
                static_cast<unsigned long long>(low & 0xFFFFFFFFFFFFULL));
  return std::string(prefix) + "-" + text;
}

}  // namespace gpunode::sim
