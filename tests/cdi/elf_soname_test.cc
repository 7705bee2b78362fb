// The SONAME reader: on files laid out as a linker lays out a library, and on the real libraries
// this test has loaded, against binutils' readelf.
#include "cdi/elf_soname.h"

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "elf_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "process.h"
#include "temp_dir.h"

namespace gpunode::cdi {
namespace {

using ::testing::HasSubstr;

TEST(ElfSonameTest, TheDynamicSectionsSonameOrTheFileName) {
  testing::TempDir dir("gpunode-soname");
  dir.Write("libcuda.so.535.261.03", testing::ElfLibrary({"libcuda.so.1"}));
  dir.Write("libnvidia-pkcs11.so.535.261.03", testing::ElfLibrary({}));
  core::HostRoot root(dir.path());
  EXPECT_EQ(ReadSoname(root, "/libcuda.so.535.261.03").value_or("?"), "libcuda.so.1");
  // As debug/elf and the toolkit take it: no SONAME, the file's own name.
  EXPECT_EQ(ReadSoname(root, "/libnvidia-pkcs11.so.535.261.03").value_or("?"),
            "libnvidia-pkcs11.so.535.261.03");
}

TEST(ElfSonameTest, WhatIsNotOneLibraryIsAnError) {
  testing::TempDir dir("gpunode-soname");
  dir.Write("two", testing::ElfLibrary({"liba.so.1", "libb.so.1"}));
  dir.Write("text", "ELF, but not the magic");
  std::string elf32 = testing::ElfLibrary({"liba.so.1"});
  elf32[4] = 1;  // ELFCLASS32
  dir.Write("elf32", elf32);
  std::string cut = testing::ElfLibrary({"liba.so.1"});
  dir.Write("cut", cut.substr(0, cut.size() - 10));  // the section headers cut short
  core::HostRoot root(dir.path());
  EXPECT_THAT(ReadSoname(root, "/two").status().message(), HasSubstr("more than one SONAME"));
  EXPECT_THAT(ReadSoname(root, "/text").status().message(), HasSubstr("not an ELF file"));
  EXPECT_THAT(ReadSoname(root, "/elf32").status().message(), HasSubstr("not a 64-bit"));
  EXPECT_THAT(ReadSoname(root, "/cut").status().message(), HasSubstr("cut short"));
  EXPECT_EQ(ReadSoname(root, "/absent").status().code(), absl::StatusCode::kNotFound);
}

// The hook makes a link of the SONAME's name beside the library: a name that is no file name
// would put it elsewhere (or nowhere), so it is refused.
TEST(ElfSonameTest, ASonameThatIsNoFileNameIsRefused) {
  testing::TempDir dir("gpunode-soname");
  dir.Write("up", testing::ElfLibrary({"../../usr/lib/libc.so.6"}));
  dir.Write("dots", testing::ElfLibrary({".."}));
  dir.Write("empty", testing::ElfLibrary({""}));
  core::HostRoot root(dir.path());
  for (const char* file : {"/up", "/dots", "/empty"}) {
    absl::StatusOr<std::string> soname = ReadSoname(root, file);
    EXPECT_FALSE(soname.ok()) << file << ": " << soname.value_or("");
    EXPECT_THAT(soname.status().message(), HasSubstr("is no file name")) << file;
  }
}

// A section header table the header claims to be huge is refused before anything is read.
TEST(ElfSonameTest, AHeaderThatClaimsHugeSectionsIsAnError) {
  testing::TempDir dir("gpunode-soname");
  std::string elf = testing::ElfLibrary({"liba.so.1"});
  elf[0x3A] = '\xff';  // e_shentsize 0xffff ...
  elf[0x3B] = '\xff';
  elf[0x3C] = '\xff';  // ... times e_shnum 0xffff
  elf[0x3D] = '\xff';
  dir.Write("huge", elf);
  core::HostRoot root(dir.path());
  EXPECT_THAT(ReadSoname(root, "/huge").status().message(), HasSubstr("too large"));
}

// Every shared library mapped into this process (libc, libstdc++, gtest, abseil, ...), as the
// system's linker made it: the SONAME readelf prints.
TEST(ElfSonameTest, RealLibrariesAgreeWithReadelf) {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> libraries;
  std::string line;
  while (std::getline(maps, line)) {
    size_t slash = line.find('/');
    if (slash != std::string::npos && line.find(".so", slash) != std::string::npos) {
      libraries.insert(line.substr(slash));
    }
  }
  ASSERT_GE(libraries.size(), 3u);
  core::HostRoot root("/");
  std::regex soname(R"(\(SONAME\)\s+Library soname: \[([^\]]+)\])");
  for (const std::string& library : libraries) {
    testing::ProcessResult r =
        testing::RunProcess({"/bin/sh", "-c", "exec readelf -d \"$0\"", library});
    ASSERT_EQ(r.exit_code, 0) << library << ": " << r.err;
    std::smatch m;
    std::string expected =
        std::regex_search(r.out, m, soname) ? m[1].str() : library.substr(library.rfind('/') + 1);
    EXPECT_EQ(ReadSoname(root, library).value_or("?"), expected) << library;
  }
}

}  // namespace
}  // namespace gpunode::cdi
