// Unit tests of the loaders and value parsers, linked directly (no dlopen).
#include <gtest/gtest.h>

#include "brands.h"
#include "builtin_profiles.h"
#include "capture_loader.h"
#include "mig_geometry.h"
#include "pci_address.h"
#include "profile_loader.h"
#include "text_values.h"
#include "timeline.h"
#include "topology_matrix.h"

namespace gpunode::sim {
namespace {

TEST(LoaderTest, FixedPointIsExact) {
  EXPECT_EQ(parse_fixed("26.58", 3), 26580u);
  EXPECT_EQ(parse_fixed("66.92", 3), 66920u);
  EXPECT_EQ(parse_fixed("400", 3), 400000u);
  EXPECT_EQ(parse_fixed("0.0005", 3), 1u);  // rounds half up
  EXPECT_EQ(parse_fixed("1.", 3), std::nullopt);
  EXPECT_EQ(parse_fixed("-1", 3), std::nullopt);
  EXPECT_EQ(parse_fixed("99999999999999999999", 3), std::nullopt);
  EXPECT_EQ(parse_with_unit(" 40 % ", "%"), 40u);
  EXPECT_EQ(parse_with_unit("N/A", "%"), std::nullopt);
  EXPECT_EQ(parse_with_unit("26.58 W", "W", 3), 26580u);
  EXPECT_EQ(parse_with_unit("[Not Supported]", "W", 3), std::nullopt);
}

TEST(LoaderTest, Durations) {
  EXPECT_EQ(parse_duration("250ms"), std::chrono::milliseconds(250));
  EXPECT_EQ(parse_duration("2s"), std::chrono::seconds(2));
  EXPECT_EQ(parse_duration("1.5s"), std::chrono::milliseconds(1500));
  EXPECT_EQ(parse_duration("1m"), std::chrono::minutes(1));
  EXPECT_EQ(parse_duration("24h"), std::chrono::hours(24));
  EXPECT_EQ(parse_duration("0"), std::chrono::seconds(0));
  EXPECT_EQ(parse_duration("25h"), std::nullopt);
  EXPECT_EQ(parse_duration("250"), std::nullopt);
  EXPECT_EQ(parse_duration("-1s"), std::nullopt);
  EXPECT_EQ(parse_duration("99999999999999999999s"), std::nullopt);
}

TEST(LoaderTest, BusIds) {
  auto full = parse_bus_id("00000000:1B:00.0");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->bus_id(), "00000000:1B:00.0");
  EXPECT_EQ(full->bus_id_legacy(), "0000:1B:00.0");
  EXPECT_EQ(parse_bus_id("0000:1b:00.0"), full);
  EXPECT_EQ(parse_bus_id("1B:00.0"), full);
  EXPECT_EQ(parse_bus_id("0000:1B:20.0"), std::nullopt);  // device is 5 bits
  EXPECT_EQ(parse_bus_id("0000:1B:00.8"), std::nullopt);
  EXPECT_EQ(parse_bus_id("1B"), std::nullopt);
}

TEST(LoaderTest, MigNames) {
  constexpr uint64_t MiB = 1 << 20;
  EXPECT_EQ(mig_profile_name(1, 1, 9728 * MiB, 81920 * MiB), "1g.10gb");
  EXPECT_EQ(mig_profile_name(3, 3, 19968 * MiB, 40960 * MiB), "3g.20gb");
  EXPECT_EQ(mig_profile_name(3, 1, 40192 * MiB, 81920 * MiB), "1c.3g.40gb");
  EXPECT_EQ(mig_profile_name(7, 7, 80896 * MiB, 81920 * MiB), "7g.80gb");
  auto slices = parse_mig_profile_name("2c.4g.40gb");
  ASSERT_TRUE(slices);
  EXPECT_EQ(slices->gpu_instance, 4u);
  EXPECT_EQ(slices->compute_instance, 2u);
  EXPECT_FALSE(parse_mig_profile_name("5c.4g.40gb"));
  EXPECT_FALSE(parse_mig_profile_name("g.40gb"));
  // Captures: slices from SMs and memory share.
  EXPECT_EQ(derive_gpu_instance_slices(42, 19968 * MiB, 40960 * MiB, 14, 7), 3u);
  EXPECT_EQ(derive_gpu_instance_slices(28, 40192 * MiB, 81920 * MiB, 14, 7),
            3u);  // two 1c CIs of a 3g
  EXPECT_EQ(derive_gpu_instance_slices(56, 40192 * MiB, 81920 * MiB, 14, 7), 4u);
  EXPECT_EQ(derive_gpu_instance_slices(132, 80896 * MiB, 81920 * MiB, 16, 7), 7u);
  EXPECT_EQ(derive_compute_instance_slices(14, 14, 3), 1u);
}

// The brand a product reports, judged from its name where a profile gives no capture to read it
// from. The products' "Product Brand" was seen in public nvidia-smi outputs of current drivers
// (sim/SOURCES.md), except the B and A vGPU series, which follow NVIDIA's vGPU type naming.
TEST(LoaderTest, BrandFromProductName) {
  constexpr auto kBare = NVML_GPU_VIRTUALIZATION_MODE_NONE;
  constexpr auto kGuest = NVML_GPU_VIRTUALIZATION_MODE_VGPU;
  constexpr unsigned kPascal = 4, kVolta = 5, kTuring = 6, kAmpere = 7, kAda = 8, kHopper = 9,
                     kBlackwell = 10;
  struct Case {
    const char* name;
    std::optional<unsigned> architecture;
    nvmlGpuVirtualizationMode_t mode;
    nvmlBrandType_t brand;
  };
  const Case cases[] = {
      {"NVIDIA H100 80GB HBM3", kHopper, kBare, NVML_BRAND_NVIDIA},
      {"NVIDIA H200", kHopper, kBare, NVML_BRAND_NVIDIA},
      {"NVIDIA A100-SXM4-80GB", kAmpere, kBare, NVML_BRAND_NVIDIA},
      {"NVIDIA A10", kAmpere, kBare, NVML_BRAND_NVIDIA},
      {"Tesla T4", kTuring, kBare, NVML_BRAND_NVIDIA},
      {"Tesla V100-SXM2-16GB", kVolta, kBare, NVML_BRAND_TESLA},
      {"Tesla P100-PCIE-16GB", kPascal, kBare, NVML_BRAND_TESLA},
      {"Tesla V100-SXM2-16GB", std::nullopt, kBare, NVML_BRAND_TESLA},
      {"NVIDIA GeForce RTX 4090", kAda, kBare, NVML_BRAND_GEFORCE},
      {"NVIDIA GeForce RTX 5090", kBlackwell, kBare, NVML_BRAND_GEFORCE},
      {"NVIDIA TITAN RTX", kTuring, kBare, NVML_BRAND_TITAN},
      {"NVIDIA TITAN V", kVolta, kBare, NVML_BRAND_TITAN},
      {"Quadro P5000", kPascal, kBare, NVML_BRAND_QUADRO},
      {"NVIDIA RTX A6000", kAmpere, kBare, NVML_BRAND_NVIDIA_RTX},
      {"NVIDIA RTX 6000 Ada Generation", kAda, kBare, NVML_BRAND_NVIDIA_RTX},
      {"NVIDIA RTX A2000 8GB Laptop GPU", kAmpere, kBare, NVML_BRAND_NVIDIA_RTX},
      // vGPU guests report the licensed product of the vGPU type's series.
      {"NVIDIA A10-12Q", kAmpere, kGuest, NVML_BRAND_NVIDIA_VWS},
      {"NVIDIA RTXA6000-24Q", kAmpere, kGuest, NVML_BRAND_NVIDIA_VWS},
      {"GRID A100-4C", kAmpere, kGuest, NVML_BRAND_NVIDIA_VCS},
      {"NVIDIA A16-2B", kAmpere, kGuest, NVML_BRAND_NVIDIA_VPC},
      {"NVIDIA A16-1A", kAmpere, kGuest, NVML_BRAND_NVIDIA_VAPPS},
      // A name without a vGPU type, in a guest or passed through, is judged as on bare metal.
      {"NVIDIA A100-SXM4-80GB", kAmpere, kGuest, NVML_BRAND_NVIDIA},
      {"NVIDIA A10", kAmpere, NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH, NVML_BRAND_NVIDIA},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(brand_from_product_name(c.name, c.architecture, c.mode), c.brand) << c.name;
  }
  EXPECT_EQ(brand_from_product_name("", kHopper, kBare), std::nullopt);
}

// nvidia-smi's "Product Brand" words back to NVML's value; anything else is not a brand.
TEST(LoaderTest, BrandFromNvidiaSmiText) {
  EXPECT_EQ(brand_from_smi_text("NVIDIA"), NVML_BRAND_NVIDIA);
  EXPECT_EQ(brand_from_smi_text("Tesla"), NVML_BRAND_TESLA);
  EXPECT_EQ(brand_from_smi_text("GeForce"), NVML_BRAND_GEFORCE);
  EXPECT_EQ(brand_from_smi_text("Quadro"), NVML_BRAND_QUADRO);
  EXPECT_EQ(brand_from_smi_text("Titan"), NVML_BRAND_TITAN);
  EXPECT_EQ(brand_from_smi_text("NVIDIA RTX"), NVML_BRAND_NVIDIA_RTX);
  EXPECT_EQ(brand_from_smi_text("NVIDIA RTX Virtual Workstation"), NVML_BRAND_NVIDIA_VWS);
  EXPECT_EQ(brand_from_smi_text("NVIDIA Virtual Compute Server"), NVML_BRAND_NVIDIA_VCS);
  EXPECT_EQ(brand_from_smi_text("GRID"), NVML_BRAND_GRID);
  EXPECT_EQ(brand_from_smi_text("Unknown"), NVML_BRAND_UNKNOWN);
  EXPECT_EQ(brand_from_smi_text("N/A"), std::nullopt);
  EXPECT_EQ(brand_from_smi_text(""), std::nullopt);
  EXPECT_EQ(brand_from_smi_text("NVIDIA RTX PRO"), std::nullopt);
}

TEST(LoaderTest, EveryBuiltinProfileLoads) {
  ASSERT_EQ(builtin_profiles().size(), 5u);
  for (const BuiltinProfile& profile : builtin_profiles()) {
    auto node = load_profile(profile.yaml, profile.name);
    EXPECT_TRUE(node.ok()) << node.error();
  }
}

TEST(LoaderTest, TopologyCells) {
  auto matrix = parse_topology("GPU0 GPU1\nGPU0 X SOC\nGPU1 SOC X\n", {"t", 0});
  ASSERT_TRUE(matrix.ok()) << matrix.error();
  EXPECT_EQ(matrix.value().cells[0][1].level, NVML_TOPOLOGY_SYSTEM);  // SOC is the old SYS
  auto nv = parse_topology("GPU0 GPU1\nGPU0 X NV0\nGPU1 NV0 X\n", {"t", 0});
  EXPECT_FALSE(nv.ok());
  auto order = parse_topology("GPU1 GPU0\nGPU0 X SYS\nGPU1 SYS X\n", {"t", 0});
  ASSERT_FALSE(order.ok());
  EXPECT_EQ(order.error(),
            "t:1: header column 1 is \"GPU1\", expected GPU0; the header must list GPU0, GPU1, ... "
            "in order");
}

TEST(LoaderTest, CaptureValuesThatAreNotValues) {
  auto node = load_capture(R"(<nvidia_smi_log><gpu id="zz">
      <fb_memory_usage><total>abc MiB</total><used>-1 MiB</used></fb_memory_usage>
      <temperature><gpu_temp>-7 C</gpu_temp></temperature>
      <fan_speed>[Unknown Error]</fan_speed>
      <performance_state>P99</performance_state>
      <power_readings><power_draw>99999999999 W</power_draw></power_readings>
    </gpu></nvidia_smi_log>)",
                           "odd.xml");
  ASSERT_TRUE(node.ok()) << node.error();
  const GpuModel& gpu = node.value().gpus[0];
  EXPECT_FALSE(gpu.memory);
  EXPECT_FALSE(gpu.temperature_c);
  EXPECT_FALSE(gpu.fan_percent);
  EXPECT_FALSE(gpu.pstate);
  EXPECT_FALSE(gpu.power_mw);
  EXPECT_FALSE(gpu.pci);
}

}  // namespace
}  // namespace gpunode::sim
