// gpunode's NVML declarations against NVIDIA's real parts, on a machine without a GPU.
//
// NVIDIA's header (Debian's libnvidia-ml-dev, NVIDIA_NVML_HEADER_VERSION) fixes the layouts,
// constants and signatures that src/nvml/abi.h restates; NVIDIA's library of driver 535 (Debian's
// libnvidia-ml1, NVIDIA_NVML_LIBRARY_VERSION) must export what src/nvml/entry_points.h resolves,
// and answers nvmlInit as it does on a node whose kernel module is not loaded.
#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "abi_description.h"
#include "absl/strings/str_split.h"
#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nvml/device.h"
#include "nvml/entry_points.h"
#include "process.h"

namespace gpunode::nvml_abi {
namespace {

using ::testing::HasSubstr;

// Entry points the table resolves that NVIDIA added after the header's version, with the reason
// they cannot be compared; each must be absent from the header's list.
const std::map<std::string, std::string> kNewerThanHeader = {
    {"nvmlDeviceGetNumaNodeId", "added to NVML after driver 535"},
    {"nvmlGpmMigSampleGet", "declared from the CUDA 12.0 header on; driver 535 exports it"},
    {"nvmlDeviceGetProcessesUtilizationInfo", "added to NVML in driver 550 (CUDA 12.4 header)"},
};

// Entry points NVIDIA added after driver 535: the real library must not export them (else the
// entry belongs in the checked set), and gpunode treats them as not supported there.
const std::map<std::string, std::string> kNewerThanLibrary = {
    {"nvmlDeviceGetNumaNodeId", "added to NVML after driver 535"},
    {"nvmlDeviceGetProcessesUtilizationInfo", "added to NVML in driver 550"},
};

struct EntryPoint {
  std::string member;
  std::vector<std::string> symbols;  // preferred first, then fallbacks
};

std::vector<EntryPoint> Table() {
  std::vector<EntryPoint> table;
#define GPUNODE_NVML_NAMES(member, preferred, ...) \
  table.push_back({#member, absl::StrSplit(#preferred __VA_OPT__(", " #__VA_ARGS__), ", ")});
  GPUNODE_NVML_ENTRY_POINTS(GPUNODE_NVML_NAMES)
#undef GPUNODE_NVML_NAMES
  return table;
}

std::string LibraryPath() {
  return std::string(build_paths::kNvidiaDriverRoot) +
         "/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1";
}

TEST(NvidiaHeader, StructLayoutsMatch) {
  AbiDescription ours = OurAbi(), nvidia = NvidiaAbi();
  ASSERT_FALSE(ours.struct_sizes.empty());
  for (const auto& [name, size] : ours.struct_sizes) {
    EXPECT_EQ(size, nvidia.struct_sizes.at(name))
        << "sizeof(" << name << ") differs from nvml.h " << NVIDIA_NVML_HEADER_VERSION;
  }
  for (const auto& [name, layout] : ours.fields) {
    const FieldLayout& theirs = nvidia.fields.at(name);
    EXPECT_EQ(layout.offset, theirs.offset) << name << ": offset";
    EXPECT_EQ(layout.size, theirs.size) << name << ": size";
  }
}

TEST(NvidiaHeader, ConstantsMatch) {
  AbiDescription ours = OurAbi(), nvidia = NvidiaAbi();
  ASSERT_FALSE(ours.constants.empty());
  for (const auto& [name, value] : ours.constants) {
    EXPECT_EQ(value, nvidia.constants.at(name)) << name;
  }
}

TEST(NvidiaHeader, EntryPointSignaturesMatch) {
  AbiDescription ours = OurAbi(), nvidia = NvidiaAbi();
  ASSERT_FALSE(ours.entry_points.empty());
  for (const auto& [name, shape] : ours.entry_points) {
    EXPECT_EQ(shape, nvidia.entry_points.at(name)) << name;
  }
}

// A new entry in the table is either compared with the header or named as newer than it.
TEST(NvidiaHeader, EveryEntryPointIsComparedOrNamedNewer) {
  AbiDescription ours = OurAbi();
  for (const EntryPoint& entry : Table()) {
    for (const std::string& symbol : entry.symbols) {
      bool compared = ours.entry_points.contains(symbol);
      bool newer = kNewerThanHeader.contains(symbol);
      EXPECT_TRUE(compared != newer)
          << symbol << " (" << entry.member
          << "): add it to GPUNODE_NVML_HEADER_ENTRY_POINTS in tests/nvml/abi_lists.h, or to "
             "kNewerThanHeader when nvml.h "
          << NVIDIA_NVML_HEADER_VERSION << " does not declare it";
    }
  }
}

// Every brand NVIDIA's header enumerates gets the name NVIDIA's DRA driver publishes for it: the
// words of go-nvlib's Device.GetBrandAsString (NVIDIA/go-nvlib pkg/nvlib/device/device.go), by
// the header's constant names, so that a value of ours off from the header shows up here too.
TEST(NvidiaHeader, BrandNamesAreGoNvlibsForEveryBrand) {
  const std::map<std::string, std::string> go_nvlib = {
      {"NVML_BRAND_UNKNOWN", "Unknown"},
      {"NVML_BRAND_QUADRO", "Quadro"},
      {"NVML_BRAND_TESLA", "Tesla"},
      {"NVML_BRAND_NVS", "NVS"},
      {"NVML_BRAND_GRID", "Grid"},
      {"NVML_BRAND_GEFORCE", "GeForce"},
      {"NVML_BRAND_TITAN", "Titan"},
      {"NVML_BRAND_NVIDIA_VAPPS", "NvidiaVApps"},
      {"NVML_BRAND_NVIDIA_VPC", "NvidiaVPC"},
      {"NVML_BRAND_NVIDIA_VCS", "NvidiaVCS"},
      {"NVML_BRAND_NVIDIA_VWS", "NvidiaVWS"},
      {"NVML_BRAND_NVIDIA_CLOUD_GAMING", "NvidiaCloudGaming"},
      {"NVML_BRAND_QUADRO_RTX", "QuadroRTX"},
      {"NVML_BRAND_NVIDIA_RTX", "NvidiaRTX"},
      {"NVML_BRAND_NVIDIA", "Nvidia"},
      {"NVML_BRAND_GEFORCE_RTX", "GeForceRTX"},
      {"NVML_BRAND_TITAN_RTX", "TitanRTX"},
  };
  AbiDescription nvidia = NvidiaAbi();
  const long long count = nvidia.constants.at("NVML_BRAND_COUNT");
  EXPECT_EQ(static_cast<long long>(go_nvlib.size()), count)
      << "nvml.h " << NVIDIA_NVML_HEADER_VERSION << " has brands go-nvlib's list does not name";
  std::set<long long> named;
  for (const auto& [constant, name] : go_nvlib) {
    long long value = nvidia.constants.at(constant);
    named.insert(value);
    EXPECT_EQ(nvml::BrandName(static_cast<nvmlBrandType_t>(value)), name) << constant;
  }
  EXPECT_EQ(named.size(), go_nvlib.size());
  // go-nvlib fails on a value it does not know, and NVIDIA's DRA driver then publishes nothing.
  EXPECT_EQ(nvml::BrandName(static_cast<nvmlBrandType_t>(count)), "");
  EXPECT_EQ(nvml::BrandName(-1), "");
}

TEST(NvidiaLibrary, ExportsEveryEntryPointOfItsDriver) {
  void* library = dlopen(LibraryPath().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  for (const EntryPoint& entry : Table()) {
    std::vector<std::string> exported;
    for (const std::string& symbol : entry.symbols) {
      if (dlsym(library, symbol.c_str()) != nullptr) exported.push_back(symbol);
    }
    bool newer = kNewerThanLibrary.contains(entry.symbols.front());
    if (newer) {
      EXPECT_TRUE(exported.empty())
          << entry.symbols.front() << " is exported by driver " << NVIDIA_NVML_LIBRARY_VERSION
          << ": drop it from kNewerThanLibrary";
    } else {
      EXPECT_FALSE(exported.empty()) << entry.member << ": driver " << NVIDIA_NVML_LIBRARY_VERSION
                                     << " exports none of its names";
      // The preferred name is the one this driver has: a fallback in use on a 535 driver would
      // mean the table prefers a name that does not exist.
      if (!exported.empty()) {
        EXPECT_EQ(exported.front(), entry.symbols.front()) << entry.member;
      }
    }
  }
  dlclose(library);
}

// The real library on a host without NVIDIA's kernel module: one line that names the library and
// the likely cause, exit 1, for --nvml-library and for a --driver-root laid out as Debian does.
TEST(NvidiaLibrary, WithoutTheKernelModuleInventoryNamesTheCause) {
  if (std::filesystem::exists("/proc/driver/nvidia/version")) {
    GTEST_SKIP() << "NVIDIA's kernel module is loaded on this host";
  }
  for (std::vector<std::string> where :
       {std::vector<std::string>{"--nvml-library", LibraryPath()},
        std::vector<std::string>{"--driver-root", build_paths::kNvidiaDriverRoot}}) {
    std::vector<std::string> argv = {build_paths::kBinary};
    argv.insert(argv.end(), where.begin(), where.end());
    argv.push_back("inventory");
    testing::ProcessResult r = testing::RunProcess(testing::WithOwnDev(argv));
    EXPECT_EQ(r.exit_code, 1) << where[0];
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("NVML_ERROR_DRIVER_NOT_LOADED"));
    EXPECT_THAT(r.err, HasSubstr("/nvidia/current/libnvidia-ml.so.1"));
    EXPECT_THAT(r.err, HasSubstr("kernel module is not loaded"));
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
}  // namespace gpunode::nvml_abi
