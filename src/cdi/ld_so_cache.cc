#include "cdi/ld_so_cache.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace gpunode::cdi {
namespace {

constexpr absl::string_view kOldMagic = "ld.so-1.7.0";  // followed by a NUL in the file
constexpr absl::string_view kNewMagic = "glibc-ld.so.cache";
constexpr absl::string_view kNewVersion = "1.1";
constexpr size_t kOldHeaderSize = 12 + 4;  // magic with its NUL, nlibs
constexpr size_t kOldEntrySize = 12;       // flags, key, value
constexpr size_t kNewHeaderSize = 48;
constexpr size_t kNewEntrySize = 24;

constexpr int32_t kFlagTypeMask = 0x00ff;
constexpr int32_t kFlagElfLibc6 = 0x0003;
constexpr int32_t kFlagArchMask = 0xff00;
constexpr int32_t kFlagX8664Lib64 = 0x0300;
constexpr int32_t kFlagAarch64Lib64 = 0x0a00;

// cache_file_new.flags: which byte order wrote the file.
constexpr uint8_t kEndianUnset = 0;
constexpr uint8_t kEndianLittle = 2;

uint32_t U32(absl::string_view bytes, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
  return v;
}

uint64_t U64(absl::string_view bytes, size_t at) {
  return static_cast<uint64_t>(U32(bytes, at)) | (static_cast<uint64_t>(U32(bytes, at + 4)) << 32);
}

}  // namespace

bool LdCacheEntry::Is64BitElf() const {
  if ((flags & kFlagTypeMask) != kFlagElfLibc6) return false;
  int32_t arch = flags & kFlagArchMask;
  return arch == kFlagX8664Lib64 || arch == kFlagAarch64Lib64;
}

absl::StatusOr<std::vector<LdCacheEntry>> ParseLdSoCache(absl::string_view bytes,
                                                         absl::string_view source) {
  auto invalid = [&](size_t at, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not a glibc ld.so.cache (", what,
                                                   " at byte ", at,
                                                   "); regenerate it with ldconfig"));
  };
  size_t start = 0;
  if (bytes.substr(0, kOldMagic.size()) == kOldMagic) {
    if (bytes.size() < kOldHeaderSize) return invalid(0, "truncated old-format header");
    uint64_t old_entries = U32(bytes, 12);
    uint64_t end = kOldHeaderSize + old_entries * kOldEntrySize;
    end = (end + 7) & ~uint64_t{7};  // the new header is 8-byte aligned
    if (end > bytes.size()) return invalid(kOldHeaderSize, "old-format table past the end");
    start = static_cast<size_t>(end);
  }
  absl::string_view cache = bytes.substr(start);
  if (cache.size() < kNewHeaderSize) return invalid(start, "truncated header");
  if (cache.substr(0, kNewMagic.size()) != kNewMagic) return invalid(start, "no magic");
  if (cache.substr(kNewMagic.size(), kNewVersion.size()) != kNewVersion) {
    return invalid(start + kNewMagic.size(), "version is not 1.1");
  }
  uint8_t endian = static_cast<uint8_t>(cache[28]);
  if (endian != kEndianUnset && endian != kEndianLittle) {
    return invalid(start + 28, "not written in little-endian byte order");
  }
  uint64_t count = U32(cache, 20);
  if (count > (cache.size() - kNewHeaderSize) / kNewEntrySize) {
    return invalid(start + 20, absl::StrCat(count, " entries do not fit in the file"));
  }

  // A string at `offset` from the new header, which must end in a NUL inside the file.
  auto string_at = [&](uint32_t offset, size_t field_at) -> absl::StatusOr<std::string> {
    if (offset >= cache.size()) return invalid(start + field_at, "string offset past the end");
    size_t end = cache.find('\0', offset);
    if (end == absl::string_view::npos) return invalid(start + offset, "unterminated string");
    return std::string(cache.substr(offset, end - offset));
  };

  std::vector<LdCacheEntry> entries;
  entries.reserve(static_cast<size_t>(count));
  for (size_t i = 0; i < count; ++i) {
    size_t at = kNewHeaderSize + i * kNewEntrySize;
    LdCacheEntry entry;
    entry.flags = static_cast<int32_t>(U32(cache, at));
    absl::StatusOr<std::string> name = string_at(U32(cache, at + 4), at + 4);
    if (!name.ok()) return name.status();
    absl::StatusOr<std::string> path = string_at(U32(cache, at + 8), at + 8);
    if (!path.ok()) return path.status();
    entry.name = std::move(*name);
    entry.path = std::move(*path);
    entry.hwcap = U64(cache, at + 16);
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace gpunode::cdi
