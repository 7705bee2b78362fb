#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "host/pci.h"

namespace gpunode::host {
namespace {

namespace fs = std::filesystem;

// Writes a sysfs-shaped PCI device under `root`.
void AddPciDevice(const fs::path& root, const std::string& address, const std::string& vendor,
                  const std::string& device, const std::string& class_code, const std::string& numa,
                  const std::string& resource = "") {
  fs::path dir = root / "sys/bus/pci/devices" / address;
  fs::create_directories(dir);
  std::ofstream(dir / "vendor") << vendor << "\n";
  std::ofstream(dir / "device") << device << "\n";
  std::ofstream(dir / "class") << class_code << "\n";
  std::ofstream(dir / "numa_node") << numa << "\n";
  if (!resource.empty()) std::ofstream(dir / "resource") << resource;
}

class PciScan : public ::testing::Test {
 protected:
  void SetUp() override {
    // ctest runs each test as its own process, in parallel: one tree per test.
    root_ = fs::path(::testing::TempDir()) /
            (std::string("pci-root-") +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    // A 3D controller with 16 MiB BAR0 and a 32 GiB BAR1, on NUMA node 1.
    AddPciDevice(root_, "0000:c1:00.0", "0x10de", "0x2330", "0x030200", "1",
                 "0x00000000fa000000 0x00000000faffffff 0x0000000000040200\n"
                 "0x0000220000000000 0x00002207ffffffff 0x000000000014220c\n"
                 "0x0000000000000000 0x0000000000000000 0x0000000000000000\n");
    AddPciDevice(root_, "0000:07:00.0", "0x10de", "0x1db1", "0x030000", "-1");  // VGA, no NUMA
    AddPciDevice(root_, "0000:07:00.1", "0x10de", "0x10f0", "0x040300", "0");  // its audio function
    AddPciDevice(root_, "0000:05:00.0", "0x10de", "0x22a3", "0x068000", "0");  // an NVSwitch
    AddPciDevice(root_, "0000:00:1f.0", "0x8086", "0xa1c1", "0x060100", "0");  // not NVIDIA
    fs::create_directories(root_ / "sys/kernel/iommu_groups/42");
    fs::create_symlink("../../../../kernel/iommu_groups/42",
                       root_ / "sys/bus/pci/devices/0000:c1:00.0/iommu_group");
    fs::create_directories(root_ / "sys/bus/pci/drivers/nvidia");
    fs::create_symlink("../../../../bus/pci/drivers/nvidia",
                       root_ / "sys/bus/pci/devices/0000:c1:00.0/driver");
  }
  fs::path root_;
};

TEST_F(PciScan, FindsOnlyNvidiaDisplayAnd3dControllers) {
  absl::StatusOr<std::vector<PciDevice>> gpus = ScanNvidiaGpus(core::HostRoot(root_.string()));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].address, "0000:07:00.0");
  EXPECT_EQ((*gpus)[0].class_code, 0x030000u);
  EXPECT_FALSE((*gpus)[0].numa_node.has_value());  // -1 means the platform did not say
  EXPECT_EQ((*gpus)[1].address, "0000:c1:00.0");
  EXPECT_EQ((*gpus)[1].device_id, 0x2330);
  EXPECT_EQ((*gpus)[1].numa_node, 1);
  EXPECT_EQ((*gpus)[1].iommu_group, "42");
  EXPECT_EQ((*gpus)[1].driver, "nvidia");
  ASSERT_EQ((*gpus)[1].bar_sizes.size(), 2u);
  EXPECT_EQ((*gpus)[1].bar_sizes[0], 16ull << 20);
  EXPECT_EQ((*gpus)[1].bar_sizes[1], 32ull << 30);
}

TEST_F(PciScan, ReadsByNvmlBusId) {
  absl::StatusOr<PciDevice> gpu = ReadPciDevice(core::HostRoot(root_.string()), "00000000:C1:00.0");
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ(gpu->address, "0000:c1:00.0");
  EXPECT_EQ(gpu->numa_node, 1);
}

TEST_F(PciScan, MissingSysfsIsAnErrorNamingThePath) {
  absl::StatusOr<std::vector<PciDevice>> gpus = ScanNvidiaGpus(core::HostRoot("/nonexistent-root"));
  ASSERT_FALSE(gpus.ok());
  EXPECT_NE(gpus.status().message().find("/nonexistent-root/sys/bus/pci/devices"),
            absl::string_view::npos);
}

TEST(HostRoot, ResolvesUnderTheRoot) {
  EXPECT_EQ(core::HostRoot("/").Resolve("/proc/modules"), "/proc/modules");
  EXPECT_EQ(core::HostRoot("/fixture/").Resolve("/proc/modules"), "/fixture/proc/modules");
}

TEST(SysfsAddress, ShortensNvmlDomain) {
  EXPECT_EQ(SysfsPciAddress("00000000:C1:00.0"), "0000:c1:00.0");
  EXPECT_EQ(SysfsPciAddress("0000:07:00.0"), "0000:07:00.0");
}

}  // namespace
}  // namespace gpunode::host
