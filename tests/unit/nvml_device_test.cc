// The typed NVML API against the simulator replaying a real Tesla P100 capture: every value must
// come back as the capture shows it, and what the capture marks N/A must be NOT_SUPPORTED.
#include "gtest/gtest.h"
#include "nvml/device.h"
#include "nvml/status.h"
#include "nvml/system.h"
#include "sim_library.h"

namespace gpunode::nvml {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

class TeslaP100 : public ::testing::Test {
 protected:
  void SetUp() override {
    library_ = testing::OpenSimulator(testing::Fixture("nvidia-smi-xml/tesla-p100.xml"));
    ASSERT_NE(library_, nullptr);
    absl::StatusOr<Device> device = DeviceAt(*library_, 0);
    ASSERT_TRUE(device.ok()) << device.status();
    device_.emplace(*device);
  }
  std::unique_ptr<Library> library_;
  std::optional<Device> device_;
};

TEST_F(TeslaP100, SystemValues) {
  EXPECT_EQ(DriverVersion(*library_).value_or(""), "510.47.03");
  EXPECT_EQ(CudaDriverVersion(*library_).value_or(0), 11060);
  EXPECT_EQ(DeviceCount(*library_).value_or(0), 1u);
}

TEST_F(TeslaP100, Identity) {
  EXPECT_EQ(device_->Name().value_or(""), "Tesla P100-PCIE-16GB");
  EXPECT_EQ(device_->Uuid().value_or(""), "GPU-d3da8716-eaab-75db-efc1-60e88e1cd55e");
  EXPECT_EQ(device_->Serial().value_or(""), "0324217145110");
  EXPECT_EQ(device_->MinorNumber().value_or(99), 0u);
  absl::StatusOr<PciInfo> pci = device_->Pci();
  ASSERT_TRUE(pci.ok()) << pci.status();
  EXPECT_EQ(pci->bus_id, "00000000:00:04.0");
  EXPECT_EQ(pci->pci_device_id, 0x15F810DEu);
  EXPECT_EQ(pci->bus, 0u);
  EXPECT_EQ(pci->device, 4u);
  absl::StatusOr<Device> by_uuid =
      DeviceByUuid(*library_, "GPU-d3da8716-eaab-75db-efc1-60e88e1cd55e");
  ASSERT_TRUE(by_uuid.ok());
  EXPECT_EQ(by_uuid->handle(), device_->handle());
}

TEST_F(TeslaP100, Readings) {
  absl::StatusOr<MemoryInfo> memory = device_->Memory();
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ(memory->total_bytes, 16384 * kMiB);
  EXPECT_EQ(memory->used_bytes, 0u);
  EXPECT_EQ(memory->reserved_bytes.value_or(0), 103 * kMiB);
  EXPECT_EQ(memory->free_bytes, 16280 * kMiB);
  EXPECT_EQ(device_->TemperatureC().value_or(0), 38u);
  EXPECT_EQ(device_->PowerUsageMilliwatts().value_or(0), 26160u);
  EXPECT_EQ(device_->PowerLimitMilliwatts().value_or(0), 250000u);
  absl::StatusOr<UtilizationRates> util = device_->Utilization();
  ASSERT_TRUE(util.ok());
  EXPECT_EQ(util->gpu_pct, 0u);
  EXPECT_EQ(device_->ClockMhz(ClockType::kGraphics).value_or(0), 405u);
  EXPECT_EQ(device_->ClockMhz(ClockType::kSm).value_or(0), 405u);
  EXPECT_EQ(device_->ClockMhz(ClockType::kMemory).value_or(0), 715u);
  EXPECT_EQ(device_->ClockMhz(ClockType::kVideo).value_or(0), 835u);
  EXPECT_EQ(device_->MaxClockMhz(ClockType::kSm).value_or(0), 1328u);
  EXPECT_EQ(device_->PerformanceState().value_or(-1), 0);
  EXPECT_EQ(device_->EccEnabled().value_or(false), true);
  EXPECT_EQ(device_->PersistenceModeEnabled().value_or(true), false);
}

TEST_F(TeslaP100, NotAvailableIsNotSupported) {
  absl::StatusOr<unsigned> fan = device_->FanSpeedPct();  // <fan_speed>N/A</fan_speed>
  ASSERT_FALSE(fan.ok());
  EXPECT_TRUE(IsNotSupported(fan.status())) << fan.status();
}

// The capture comes from a cloud VM that has the GPU passed through whole: no vGPU licence.
TEST_F(TeslaP100, PassedThroughWithoutVgpuLicensing) {
  EXPECT_EQ(device_->VirtualizationMode().value_or(-1), NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH);
  EXPECT_TRUE(IsNotSupported(device_->VgpuLicensed().status()));
}

TEST_F(TeslaP100, MigIsNotEnabled) {
  absl::StatusOr<bool> mig = device_->MigEnabled();
  EXPECT_FALSE(mig.ok() && *mig);
}

}  // namespace
}  // namespace gpunode::nvml
