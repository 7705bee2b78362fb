// The ld.so.cache parser: against glibc's own reader (`ldconfig -p`) on this machine's cache, and
// on caches built byte by byte for the layouts and the damage it must handle.
#include "cdi/ld_so_cache.h"

#include <cstdio>
#include <set>
#include <string>
#include <utility>

#include "core/file_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpunode::cdi {
namespace {

using ::testing::HasSubstr;

std::string Capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  pclose(pipe);
  return out;
}

void PutU32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

struct Lib {
  int32_t flags;
  std::string name, path;
};

// A new-format cache as glibc's ldconfig writes it (cache.c, save_cache).
std::string NewCache(const std::vector<Lib>& libs, uint8_t endian = 2) {
  std::string strings;
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  const uint32_t table = 48 + 24 * static_cast<uint32_t>(libs.size());
  for (const Lib& lib : libs) {
    uint32_t key = table + static_cast<uint32_t>(strings.size());
    strings += lib.name + '\0';
    uint32_t value = table + static_cast<uint32_t>(strings.size());
    strings += lib.path + '\0';
    offsets.emplace_back(key, value);
  }
  std::string s = "glibc-ld.so.cache1.1";
  PutU32(s, static_cast<uint32_t>(libs.size()));
  PutU32(s, static_cast<uint32_t>(strings.size()));
  s.push_back(static_cast<char>(endian));
  s.append(3, '\0');
  PutU32(s, 0);        // extension offset
  s.append(12, '\0');  // unused
  for (size_t i = 0; i < libs.size(); ++i) {
    PutU32(s, static_cast<uint32_t>(libs[i].flags));
    PutU32(s, offsets[i].first);
    PutU32(s, offsets[i].second);
    PutU32(s, 0);
    s.append(8, '\0');  // hwcap
  }
  return s + strings;
}

TEST(LdSoCacheTest, ReadsThisMachinesCacheAsLdconfigDoes) {
  absl::StatusOr<std::string> bytes = core::ReadFile("/etc/ld.so.cache");
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<std::vector<LdCacheEntry>> entries = ParseLdSoCache(*bytes, "/etc/ld.so.cache");
  ASSERT_TRUE(entries.ok()) << entries.status();
  // ldconfig -p prints "\tNAME (FLAGS) => PATH" per entry, in the cache's order.
  std::set<std::pair<std::string, std::string>> ldconfig, ours;
  std::string listing = Capture("ldconfig -p -C /etc/ld.so.cache");
  size_t pos = 0;
  while ((pos = listing.find("\n\t", pos)) != std::string::npos) {
    size_t end = listing.find('\n', pos + 1);
    std::string line = listing.substr(pos + 2, end - pos - 2);
    size_t space = line.find(" (");
    size_t arrow = line.find(" => ");
    if (space != std::string::npos && arrow != std::string::npos) {
      ldconfig.emplace(line.substr(0, space), line.substr(arrow + 4));
    }
    pos = end;
  }
  for (const LdCacheEntry& e : *entries) ours.emplace(e.name, e.path);
  ASSERT_FALSE(ldconfig.empty()) << listing;
  EXPECT_EQ(ours, ldconfig);
  bool libc = false;
  for (const LdCacheEntry& e : *entries) libc = libc || (e.name == "libc.so.6" && e.Is64BitElf());
  EXPECT_TRUE(libc);
}

TEST(LdSoCacheTest, ReadsEntriesAndFlags) {
  std::string cache = NewCache({{0x0303, "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"},
                                {0x0003, "libcuda.so.1", "/usr/lib/i386-linux-gnu/libcuda.so.1"},
                                {0x0a03, "libfoo.so", "/usr/lib/aarch64-linux-gnu/libfoo.so"}});
  absl::StatusOr<std::vector<LdCacheEntry>> entries = ParseLdSoCache(cache, "cache");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].name, "libcuda.so.1");
  EXPECT_EQ((*entries)[0].path, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  EXPECT_TRUE((*entries)[0].Is64BitElf());
  EXPECT_FALSE((*entries)[1].Is64BitElf());  // i386
  EXPECT_TRUE((*entries)[2].Is64BitElf());   // AArch64
}

TEST(LdSoCacheTest, SkipsTheOldFormatTable) {
  std::string old = std::string("ld.so-1.7.0") + '\0';
  PutU32(old, 2);
  old.append(2 * 12, '\x7f');                  // two old entries
  old.append((8 - old.size() % 8) % 8, '\0');  // padding to the new header
  std::string cache = old + NewCache({{0x0303, "libz.so.1", "/lib/libz.so.1"}});
  absl::StatusOr<std::vector<LdCacheEntry>> entries = ParseLdSoCache(cache, "cache");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].path, "/lib/libz.so.1");
}

TEST(LdSoCacheTest, RefusesDamageWithTheFileAndOffset) {
  std::string good = NewCache({{0x0303, "libz.so.1", "/lib/libz.so.1"}});
  EXPECT_THAT(ParseLdSoCache("", "/etc/ld.so.cache").status().message(),
              HasSubstr("/etc/ld.so.cache: not a glibc ld.so.cache (truncated header at byte 0)"));
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  EXPECT_THAT(ParseLdSoCache(bad_magic, "c").status().message(), HasSubstr("no magic"));
  std::string bad_version = good;
  bad_version[19] = '2';
  EXPECT_THAT(ParseLdSoCache(bad_version, "c").status().message(), HasSubstr("version"));
  EXPECT_THAT(ParseLdSoCache(NewCache({}, 3), "c").status().message(), HasSubstr("little-endian"));
  std::string too_many = good;
  too_many[20] = '\x50';
  EXPECT_THAT(ParseLdSoCache(too_many, "c").status().message(), HasSubstr("do not fit"));
  std::string past_end = good;
  past_end[48 + 4] = '\x7f';  // key offset
  past_end[48 + 5] = '\x7f';
  EXPECT_THAT(ParseLdSoCache(past_end, "c").status().message(), HasSubstr("past the end"));
  std::string unterminated = good.substr(0, good.size() - 1);
  EXPECT_THAT(ParseLdSoCache(unterminated, "c").status().message(), HasSubstr("unterminated"));
  EXPECT_THAT(ParseLdSoCache(std::string("ld.so-1.7.0") + '\0', "c").status().message(),
              HasSubstr("truncated old-format header"));
}

}  // namespace
}  // namespace gpunode::cdi
