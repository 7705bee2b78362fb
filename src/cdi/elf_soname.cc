#include "cdi/elf_soname.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace gpunode::cdi {
namespace {

// ELF64 (the System V ABI's gABI, <elf.h>): the fields read, by offset.
constexpr size_t kHeaderSize = 64;
constexpr size_t kSectionHeaderSize = 64;
constexpr size_t kDynamicEntrySize = 16;
constexpr uint32_t kSectionDynamic = 6;  // SHT_DYNAMIC
constexpr uint64_t kTagSoname = 14;      // DT_SONAME
// Bounds on what a real library holds, so that a corrupt header cannot make us read gigabytes.
constexpr uint64_t kMaxDynamicSize = 1 << 20;
constexpr size_t kMaxSectionTableSize = 1 << 20;  // a library has tens of 64-byte headers
constexpr size_t kMaxSonameLength = 4096;

uint64_t Little(const std::string& bytes, size_t offset, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i) {
    value |= uint64_t{static_cast<unsigned char>(bytes[offset + i])} << (8 * i);
  }
  return value;
}

struct Section {
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
};

Section ParseSection(const std::string& bytes, size_t at) {
  return {.type = static_cast<uint32_t>(Little(bytes, at + 4, 4)),
          .offset = Little(bytes, at + 24, 8),
          .size = Little(bytes, at + 32, 8),
          .link = static_cast<uint32_t>(Little(bytes, at + 40, 4))};
}

std::string SonameFallback(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

absl::StatusOr<std::string> ReadSoname(const core::HostRoot& root, const std::string& path) {
  auto problem = [&](absl::string_view what) {
    return absl::FailedPreconditionError(absl::StrCat(root.Resolve(path), ": ", what));
  };
  absl::StatusOr<std::string> header = root.ReadFileAt(path, 0, kHeaderSize);
  if (!header.ok()) return header.status();
  if (header->size() < kHeaderSize || header->compare(0, 4,
                                                      "\x7f"
                                                      "ELF") != 0) {
    return problem("not an ELF file");
  }
  if ((*header)[4] != 2 || (*header)[5] != 1) {  // EI_CLASS ELFCLASS64, EI_DATA ELFDATA2LSB
    return problem("not a 64-bit little-endian ELF file");
  }
  uint64_t section_offset = Little(*header, 0x28, 8);
  size_t entry_size = Little(*header, 0x3A, 2);
  size_t count = Little(*header, 0x3C, 2);
  if (count == 0) return SonameFallback(path);  // no section headers: nothing names a SONAME
  if (entry_size < kSectionHeaderSize) return problem("section headers too small");
  if (entry_size * count > kMaxSectionTableSize) return problem("section headers too large");
  absl::StatusOr<std::string> table = root.ReadFileAt(path, section_offset, entry_size * count);
  if (!table.ok()) return table.status();
  if (table->size() < entry_size * count) return problem("section headers cut short");

  std::optional<Section> dynamic;
  for (size_t i = 0; i < count && !dynamic; ++i) {
    Section section = ParseSection(*table, i * entry_size);
    if (section.type == kSectionDynamic) dynamic = section;
  }
  if (!dynamic) return SonameFallback(path);  // not dynamic: no SONAME
  if (dynamic->link >= count) return problem("the dynamic section links to no section");
  if (dynamic->size > kMaxDynamicSize) return problem("dynamic section too large");
  Section strings = ParseSection(*table, dynamic->link * entry_size);
  absl::StatusOr<std::string> entries = root.ReadFileAt(path, dynamic->offset, dynamic->size);
  if (!entries.ok()) return entries.status();
  if (entries->size() < dynamic->size) return problem("dynamic section cut short");

  // Every entry is looked at, not only those before DT_NULL, as debug/elf does.
  std::vector<std::string> sonames;
  for (size_t at = 0; at + kDynamicEntrySize <= entries->size(); at += kDynamicEntrySize) {
    if (Little(*entries, at, 8) != kTagSoname) continue;
    uint64_t name = Little(*entries, at + 8, 8);
    if (name >= strings.size) return problem("SONAME outside the string table");
    size_t length = std::min<uint64_t>(strings.size - name, kMaxSonameLength);
    absl::StatusOr<std::string> text = root.ReadFileAt(path, strings.offset + name, length);
    if (!text.ok()) return text.status();
    size_t end = text->find('\0');
    if (end == std::string::npos) return problem("SONAME not terminated");
    sonames.push_back(text->substr(0, end));
  }
  if (sonames.size() > 1) return problem("more than one SONAME");
  if (sonames.empty()) return SonameFallback(path);
  // The hook makes a link of this name beside the library in the container: only a file name.
  const std::string& soname = sonames[0];
  if (soname.empty() || soname == "." || soname == ".." || soname.find('/') != std::string::npos) {
    return problem(absl::StrCat("the SONAME \"", absl::CHexEscape(soname), "\" is no file name"));
  }
  return soname;
}

}  // namespace gpunode::cdi
