// glibc's /etc/ld.so.cache in the "glibc-ld.so.cache1.1" format (glibc 2.2 and later), read
// without running ldconfig, as nvidia-container-toolkit's internal/ldcache reads it. A cache may
// start with the pre-2.2 "ld.so-1.7.0" table; it is skipped and the new table after it is read.
//
// Layout (glibc elf/cache.h, all little-endian on the architectures we run on):
//   header  magic "glibc-ld.so.cache" (17 bytes), version "1.1" (3), nlibs u32, len_strings u32,
//           flags u8, 3 padding, extension_offset u32, 3 x u32 unused       = 48 bytes
//   entries nlibs x { flags i32, key u32, value u32, osversion u32, hwcap u64 } = 24 bytes each
//   strings NUL-terminated; key and value are offsets from the start of the new header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpunode::cdi {

struct LdCacheEntry {
  std::string name;  // the SONAME or file name ldconfig indexed, "libcuda.so.1"
  std::string path;  // the file as the loader opens it, "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
  int32_t flags = 0;
  uint64_t hwcap = 0;

  // An ELF libc6 library for x86-64 (FLAG_ELF_LIBC6 | FLAG_X8664_LIB64) or AArch64
  // (FLAG_AARCH64_LIB64): what a 64-bit container loads. 32-bit entries are ignored, as the
  // toolkit ignores them.
  bool Is64BitElf() const;
};

// Parses a whole cache file. An error names what is wrong and at which byte offset; `source`
// (the file name) starts the message.
absl::StatusOr<std::vector<LdCacheEntry>> ParseLdSoCache(absl::string_view bytes,
                                                         absl::string_view source);

}  // namespace gpunode::cdi
