// The create-symlinks hook's links: the fixed ones, and each library's SONAME and unversioned
// links where the driver has them beside the library.
#include "cdi/library_links.h"

#include <filesystem>

#include "elf_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "temp_dir.h"

namespace gpunode::cdi {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kDir = "/usr/lib/x86_64-linux-gnu";

DriverFile Library(const std::string& name) {
  std::string path = std::string(kDir) + "/" + name;
  return {path, "/driver" + path};
}

TEST(LibraryLinksTest, SonameAndUnversionedLinksWhereTheDriverHasThem) {
  testing::TempDir root("gpunode-links");
  const std::string dir = root.path() + kDir;
  fs::create_directories(dir);
  auto library = [&](const std::string& name, const std::vector<std::string>& sonames) {
    root.Write(std::string(kDir).substr(1) + "/" + name, testing::ElfLibrary(sonames));
  };
  // libcuda with both links, as the driver's installer makes them.
  library("libcuda.so.550.90.07", {"libcuda.so.1"});
  fs::create_symlink("libcuda.so.550.90.07", dir + "/libcuda.so.1");
  fs::create_symlink("libcuda.so.1", dir + "/libcuda.so");
  // libnvidia-ml with its SONAME link only; libnvidia-cfg with neither.
  library("libnvidia-ml.so.550.90.07", {"libnvidia-ml.so.1"});
  fs::create_symlink("libnvidia-ml.so.550.90.07", dir + "/libnvidia-ml.so.1");
  library("libnvidia-cfg.so.550.90.07", {"libnvidia-cfg.so.1"});
  // A SONAME that is the file's own name, and a plain file of that name beside it (not a link).
  library("libnvidia-pkcs11.so.550.90.07", {});
  root.Write(std::string(kDir).substr(1) + "/libnvidia-pkcs11.so", "not a link");
  // Not ELF: its fixed link still comes, the SONAME links are reported missing.
  root.Write(std::string(kDir).substr(1) + "/libnvidia-opticalflow.so.550.90.07", "text");

  std::vector<std::string> missing;
  std::vector<std::string> links = LibraryLinks(
      core::HostRoot(root.path()),
      {Library("libcuda.so.550.90.07"), Library("libnvidia-cfg.so.550.90.07"),
       Library("libnvidia-ml.so.550.90.07"), Library("libnvidia-opticalflow.so.550.90.07"),
       Library("libnvidia-pkcs11.so.550.90.07")},
      &missing);
  const std::string d = kDir;
  EXPECT_THAT(links, ElementsAre("libcuda.so.1::" + d + "/libcuda.so",
                                 "libcuda.so.550.90.07::" + d + "/libcuda.so.1",
                                 "libnvidia-ml.so.550.90.07::" + d + "/libnvidia-ml.so.1",
                                 "libnvidia-opticalflow.so.1::" + d + "/libnvidia-opticalflow.so"));
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_THAT(missing[0], HasSubstr("libnvidia-opticalflow.so.550.90.07: no SONAME links"));
}

}  // namespace
}  // namespace gpunode::cdi
