#include <cstdlib>
#include <filesystem>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nvml/library.h"
#include "nvml/status.h"
#include "nvml/system.h"

namespace gpunode::nvml {
namespace {

using ::testing::HasSubstr;

TEST(NvmlLibrary, NoDriverIsOneClearLine) {
  absl::StatusOr<std::unique_ptr<Library>> library =
      Library::Open({.driver_root = "/nonexistent-driver-root", .library_path = ""});
  ASSERT_FALSE(library.ok());
  EXPECT_EQ(library.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(library.status().message(),
            "NVIDIA driver library libnvidia-ml.so.1 not found under /nonexistent-driver-root: "
            "is the driver installed?");
}

TEST(NvmlLibrary, ExplicitPathThatIsNotALibrary) {
  absl::StatusOr<std::unique_ptr<Library>> library =
      Library::Open({.library_path = "/etc/hostname"});
  ASSERT_FALSE(library.ok());
  EXPECT_THAT(std::string(library.status().message()),
              HasSubstr("cannot load NVML library /etc/hostname"));
}

TEST(NvmlLibrary, FindsTheLibraryUnderADriverRoot) {
  namespace fs = std::filesystem;
  fs::path root = fs::path(::testing::TempDir()) / "driver-root-library-test";
  fs::create_directories(root / "usr/lib64");
  fs::remove(root / "usr/lib64/libnvidia-ml.so.1");
  fs::create_symlink(build_paths::kSimLibrary, root / "usr/lib64/libnvidia-ml.so.1");
  ::setenv("GPUNODE_SIM", "h200-1", 1);
  absl::StatusOr<std::unique_ptr<Library>> library =
      Library::Open({.driver_root = root.string(), .library_path = ""});
  ::unsetenv("GPUNODE_SIM");
  ASSERT_TRUE(library.ok()) << library.status();
  EXPECT_EQ((*library)->path(), (root / "usr/lib64/libnvidia-ml.so.1").string());
  EXPECT_EQ(DeviceCount(**library).value_or(0), 1u);
}

TEST(NvmlLibrary, OldDriverFallsBackToUnversionedNames) {
  absl::StatusOr<std::unique_ptr<Library>> library =
      Library::Open({.library_path = build_paths::kOldDriverLibrary});
  ASSERT_TRUE(library.ok()) << library.status();
  const EntryPoints& entry = (*library)->entry_points();
  EXPECT_STREQ(entry.init_symbol, "nvmlInit");
  EXPECT_STREQ(entry.device_get_count_symbol, "nvmlDeviceGetCount");
  EXPECT_STREQ(entry.device_get_handle_by_index_symbol, "nvmlDeviceGetHandleByIndex");
  EXPECT_EQ(DeviceCount(**library).value_or(0), 1u);
}

TEST(NvmlLibrary, MissingSymbolIsNotSupportedNotAFailureToStart) {
  absl::StatusOr<std::unique_ptr<Library>> library =
      Library::Open({.library_path = build_paths::kOldDriverLibrary});
  ASSERT_TRUE(library.ok()) << library.status();
  absl::StatusOr<Device> device = DeviceAt(**library, 0);
  ASSERT_TRUE(device.ok()) << device.status();
  absl::StatusOr<unsigned> power = device->PowerUsageMilliwatts();
  ASSERT_FALSE(power.ok());
  EXPECT_TRUE(IsNotSupported(power.status()));
  EXPECT_THAT(std::string(power.status().message()),
              HasSubstr("nvmlDeviceGetPowerUsage: NVML_ERROR_FUNCTION_NOT_FOUND"));
  absl::StatusOr<std::string> driver = DriverVersion(**library);
  EXPECT_TRUE(IsNotSupported(driver.status()));
}

TEST(NvmlLibrary, FormatsCudaVersions) {
  EXPECT_EQ(FormatCudaVersion(12040), "12.4");
  EXPECT_EQ(FormatCudaVersion(11060), "11.6");
  EXPECT_EQ(FormatCudaVersion(13000), "13.0");
}

}  // namespace
}  // namespace gpunode::nvml
