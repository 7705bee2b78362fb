// Small ELF64 little-endian files for the tests of the SONAME reader and the library links: a
// header, a string table and a dynamic section naming the SONAMEs given (none, one, or more), and
// the section headers that find them, the way a linker lays out a shared library's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpunode::testing {

inline void PutLittle(std::string& bytes, size_t at, uint64_t value, size_t width) {
  for (size_t i = 0; i < width; ++i) bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

inline std::string ElfLibrary(const std::vector<std::string>& sonames) {
  std::string strings(1, '\0');
  std::vector<uint64_t> offsets;
  for (const std::string& soname : sonames) {
    offsets.push_back(strings.size());
    strings += soname + '\0';
  }
  const size_t strings_at = 64;
  const size_t dynamic_at = (strings_at + strings.size() + 7) / 8 * 8;
  const size_t dynamic_size = (sonames.size() + 1) * 16;  // the SONAMEs and DT_NULL
  const size_t sections_at = dynamic_at + dynamic_size;
  std::string bytes(sections_at + 3 * 64, '\0');
  bytes.replace(0, 4,
                "\x7f"
                "ELF");
  bytes[4] = 2;                   // ELFCLASS64
  bytes[5] = 1;                   // ELFDATA2LSB
  bytes[6] = 1;                   // EV_CURRENT
  PutLittle(bytes, 0x10, 3, 2);   // ET_DYN
  PutLittle(bytes, 0x12, 62, 2);  // EM_X86_64
  PutLittle(bytes, 0x28, sections_at, 8);
  PutLittle(bytes, 0x34, 64, 2);  // e_ehsize
  PutLittle(bytes, 0x3A, 64, 2);  // e_shentsize
  PutLittle(bytes, 0x3C, 3, 2);   // e_shnum: null, .dynstr, .dynamic
  bytes.replace(strings_at, strings.size(), strings);
  for (size_t i = 0; i < sonames.size(); ++i) {
    PutLittle(bytes, dynamic_at + 16 * i, 14, 8);  // DT_SONAME
    PutLittle(bytes, dynamic_at + 16 * i + 8, offsets[i], 8);
  }
  const size_t dynstr = sections_at + 64, dynamic = sections_at + 128;
  PutLittle(bytes, dynstr + 4, 3, 4);  // SHT_STRTAB
  PutLittle(bytes, dynstr + 24, strings_at, 8);
  PutLittle(bytes, dynstr + 32, strings.size(), 8);
  PutLittle(bytes, dynamic + 4, 6, 4);  // SHT_DYNAMIC
  PutLittle(bytes, dynamic + 24, dynamic_at, 8);
  PutLittle(bytes, dynamic + 32, dynamic_size, 8);
  PutLittle(bytes, dynamic + 40, 1, 4);  // sh_link: .dynstr
  return bytes;
}

}  // namespace gpunode::testing
