// Every built-in profile through the ABI: counts, names, memory, versions, the full topology
// matrix recomputed the way gpunode computes it, MIG layouts named the way go-nvlib does, and
// brands as gpunode's NVML layer names them for NVIDIA's DRA driver.
#include <map>
#include <set>

#include "build_paths.h"
#include "nvml/device.h"
#include "nvml/library.h"
#include "nvml/system.h"
#include "sim_library.h"

namespace gpunode::sim::testing {
namespace {

class BuiltinProfileTest : public SimTest {
 protected:
  unsigned count() {
    unsigned n = 0;
    EXPECT_EQ(api().device_get_count(&n), NVML_SUCCESS);
    return n;
  }
  unsigned long long memory_total(nvmlDevice_t device) {
    nvmlMemory_t memory{};
    EXPECT_EQ(api().device_get_memory_info(device, &memory), NVML_SUCCESS);
    return memory.total;
  }
  unsigned numa(nvmlDevice_t device) {
    unsigned node = 999;
    EXPECT_EQ(api().device_get_numa_node_id(device, &node), NVML_SUCCESS);
    return node;
  }
  void expect_uniform(const std::string& name, unsigned long long memory_mib) {
    std::set<std::string> uuids;
    for (unsigned i = 0; i < count(); ++i) {
      EXPECT_EQ(name_of(gpu(i)), name) << "GPU " << i;
      EXPECT_EQ(memory_total(gpu(i)), memory_mib << 20) << "GPU " << i;
      std::string uuid = uuid_of(gpu(i));
      EXPECT_EQ(uuid.size(), 40u) << uuid;
      EXPECT_EQ(uuid.rfind("GPU-", 0), 0u) << uuid;
      uuids.insert(uuid);
      unsigned minor = 99;
      EXPECT_EQ(api().device_get_minor_number(gpu(i), &minor), NVML_SUCCESS);
      EXPECT_EQ(minor, i);
      char serial[NVML_DEVICE_SERIAL_BUFFER_SIZE];
      EXPECT_EQ(api().device_get_serial(gpu(i), serial, sizeof serial), NVML_SUCCESS);
    }
    EXPECT_EQ(uuids.size(), count());
  }
  // (pid, used MiB) of each compute process on the GPU.
  std::vector<std::pair<unsigned, unsigned long long>> processes(nvmlDevice_t device) {
    nvmlProcessInfo_t infos[16]{};
    unsigned n = 16;
    EXPECT_EQ(api().device_get_compute_running_processes(device, &n, infos), NVML_SUCCESS);
    std::vector<std::pair<unsigned, unsigned long long>> list;
    for (unsigned i = 0; i < n; ++i) list.emplace_back(infos[i].pid, infos[i].usedGpuMemory >> 20);
    return list;
  }
  using Processes = std::vector<std::pair<unsigned, unsigned long long>>;
  std::vector<std::string> every_pair(const std::string& label, unsigned n) {
    std::vector<std::string> rows;
    for (unsigned a = 0; a < n; ++a) {
      std::string row;
      for (unsigned b = 0; b < n; ++b) row += (b ? " " : "") + (a == b ? std::string("X") : label);
      rows.push_back(row);
    }
    return rows;
  }
};

TEST_F(BuiltinProfileTest, DgxH100) {
  start("dgx-h100");
  ASSERT_EQ(count(), 8u);
  expect_uniform("NVIDIA H100 80GB HBM3", 81559);
  EXPECT_EQ(topology_matrix(), every_pair("NV18", 8));
  const char* bus_ids[] = {"00000000:1B:00.0", "00000000:43:00.0", "00000000:52:00.0",
                           "00000000:61:00.0", "00000000:9D:00.0", "00000000:C3:00.0",
                           "00000000:D1:00.0", "00000000:DF:00.0"};
  std::set<std::string> switches;
  for (unsigned i = 0; i < 8; ++i) {
    EXPECT_EQ(bus_id_of(gpu(i)), bus_ids[i]);
    EXPECT_EQ(numa(gpu(i)), i < 4 ? 0u : 1u);
    unsigned links = 0;
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      nvmlPciInfo_t remote{};
      if (api().device_get_nvlink_remote_pci_info(gpu(i), link, &remote) != NVML_SUCCESS) continue;
      ++links;
      switches.insert(remote.busId);
    }
    EXPECT_EQ(links, 18u);
  }
  EXPECT_EQ(switches.size(), 4u);  // all links end on the four NVSwitches
  // NV-linked pairs have a plausible PCIe path too: NODE on one NUMA node, SYS across.
  nvmlGpuTopologyLevel_t level{};
  ASSERT_EQ(api().device_get_topology_common_ancestor(gpu(0), gpu(3), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_NODE);
  ASSERT_EQ(api().device_get_topology_common_ancestor(gpu(0), gpu(4), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_SYSTEM);
  nvmlPciInfo_t pci{};
  ASSERT_EQ(api().device_get_pci_info(gpu(0), &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busIdLegacy, "0000:1B:00.0");
  EXPECT_EQ(pci.pciDeviceId, 0x233010DEu);
  EXPECT_EQ(pci.domain, 0u);
  EXPECT_EQ(pci.bus, 0x1Bu);
  int major = 0, minor = 0;
  ASSERT_EQ(api().device_get_cuda_compute_capability(gpu(0), &major, &minor), NVML_SUCCESS);
  EXPECT_EQ(major * 10 + minor, 90);
  unsigned arch = 0;
  ASSERT_EQ(api().device_get_architecture(gpu(0), &arch), NVML_SUCCESS);
  EXPECT_EQ(arch, 9u);  // NVML_DEVICE_ARCH_HOPPER
  char driver[80];
  ASSERT_EQ(api().system_get_driver_version(driver, sizeof driver), NVML_SUCCESS);
  EXPECT_EQ(std::string(driver).rfind("550.", 0), 0u);
  unsigned speed = 0;
  EXPECT_EQ(api().device_get_fan_speed(gpu(0), &speed),
            NVML_ERROR_NOT_SUPPORTED);  // data-center GPU
  unsigned long long pages = 0;
  unsigned page_count = 0;
  EXPECT_EQ(api().device_get_retired_pages(gpu(0), NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
                                           &page_count, &pages),
            NVML_ERROR_NOT_SUPPORTED);  // Hopper remaps rows instead
  unsigned corrected = 9, uncorrected = 9, pending = 9, failure = 9;
  EXPECT_EQ(api().device_get_remapped_rows(gpu(0), &corrected, &uncorrected, &pending, &failure),
            NVML_SUCCESS);
  EXPECT_EQ(corrected + uncorrected + pending + failure, 0u);
  EXPECT_EQ(processes(gpu(0)), Processes{});
  EXPECT_EQ(processes(gpu(7)), (Processes{{48211, 24576}}));
  // HBM temperature through the field-value API; unknown fields fail one by one.
  nvmlFieldValue_t fields[2]{};
  fields[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
  fields[1].fieldId = 9999;
  ASSERT_EQ(api().device_get_field_values(gpu(0), 2, fields), NVML_SUCCESS);
  EXPECT_EQ(fields[0].nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(fields[0].valueType, NVML_VALUE_TYPE_UNSIGNED_INT);
  EXPECT_EQ(fields[0].value.uiVal, 34u);
  EXPECT_EQ(fields[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api().device_get_field_values(gpu(0), 1, nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(BuiltinProfileTest, Dgx1V100HybridCubeMesh) {
  start("dgx1-v100");
  ASSERT_EQ(count(), 8u);
  expect_uniform("Tesla V100-SXM2-16GB", 16384);
  // The published DGX-1V matrix, cell for cell.
  std::vector<std::string> expected = {
      "X NV1 NV1 NV2 NV2 SYS SYS SYS", "NV1 X NV2 NV1 SYS NV2 SYS SYS",
      "NV1 NV2 X NV2 SYS SYS NV1 SYS", "NV2 NV1 NV2 X SYS SYS SYS NV1",
      "NV2 SYS SYS SYS X NV1 NV1 NV2", "SYS NV2 SYS SYS NV1 X NV2 NV1",
      "SYS SYS NV1 SYS NV1 NV2 X NV2", "SYS SYS SYS NV1 NV2 NV1 NV2 X",
  };
  EXPECT_EQ(topology_matrix(), expected);
  for (unsigned i = 0; i < 8; ++i) {
    unsigned links = 0;
    nvmlEnableState_t active{};
    while (links < NVML_NVLINK_MAX_LINKS &&
           api().device_get_nvlink_state(gpu(i), links, &active) == NVML_SUCCESS) {
      ++links;
    }
    EXPECT_EQ(links, 6u) << "GPU " << i;
    EXPECT_EQ(numa(gpu(i)), i < 4 ? 0u : 1u);
  }
  // Volta retires pages and has no row remapper.
  unsigned page_count = 5;
  EXPECT_EQ(
      api().device_get_retired_pages(
          gpu(0), NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &page_count, nullptr),
      NVML_SUCCESS);
  EXPECT_EQ(page_count, 0u);
  unsigned a = 0, b = 0, c = 0, d = 0;
  EXPECT_EQ(api().device_get_remapped_rows(gpu(0), &a, &b, &c, &d), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(processes(gpu(0)), (Processes{{10453, 14200}}));
  unsigned long long corrected = 0;
  EXPECT_EQ(api().device_get_total_ecc_errors(gpu(0), NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                              NVML_AGGREGATE_ECC, &corrected),
            NVML_SUCCESS);
  EXPECT_EQ(corrected, 4u);
}

TEST_F(BuiltinProfileTest, A10PcieOnly) {
  start("a10-pcie-4");
  ASSERT_EQ(count(), 4u);
  expect_uniform("NVIDIA A10", 23028);
  std::vector<std::string> expected = {"X PIX SYS SYS", "PIX X SYS SYS", "SYS SYS X PIX",
                                       "SYS SYS PIX X"};
  EXPECT_EQ(topology_matrix(), expected);
  nvmlEnableState_t active{};
  EXPECT_EQ(api().device_get_nvlink_state(gpu(0), 0, &active), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(numa(gpu(1)), 0u);
  EXPECT_EQ(numa(gpu(2)), 1u);
  EXPECT_EQ(processes(gpu(2)), (Processes{{7731, 6144}}));
  unsigned decoder = 0, period = 0;
  EXPECT_EQ(api().device_get_decoder_utilization(gpu(2), &decoder, &period), NVML_SUCCESS);
  EXPECT_EQ(decoder, 63u);
  nvmlFieldValue_t field{};
  field.fieldId = NVML_FI_DEV_MEMORY_TEMP;
  ASSERT_EQ(api().device_get_field_values(gpu(0), 1, &field), NVML_SUCCESS);
  EXPECT_EQ(field.nvmlReturn, NVML_ERROR_NOT_SUPPORTED);  // GDDR6: no memory sensor reported
}

TEST_F(BuiltinProfileTest, H200Single) {
  start("h200-1");
  ASSERT_EQ(count(), 1u);
  expect_uniform("NVIDIA H200", 143771);
  EXPECT_EQ(topology_matrix(), std::vector<std::string>{"X"});
  unsigned power = 0, limit = 0;
  EXPECT_EQ(api().device_get_power_usage(gpu(0), &power), NVML_SUCCESS);
  EXPECT_EQ(power, 74500u);
  EXPECT_EQ(api().device_get_enforced_power_limit(gpu(0), &limit), NVML_SUCCESS);
  EXPECT_EQ(limit, 700000u);
  unsigned long long energy = 0;
  EXPECT_EQ(api().device_get_total_energy_consumption(gpu(0), &energy), NVML_SUCCESS);
  EXPECT_GE(energy, 412345678ULL);
  nvmlEnableState_t current{}, pending{};
  EXPECT_EQ(api().device_get_ecc_mode(gpu(0), &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, NVML_FEATURE_ENABLED);
  unsigned long long errors = 99;
  EXPECT_EQ(api().device_get_total_ecc_errors(gpu(0), NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                              NVML_VOLATILE_ECC, &errors),
            NVML_SUCCESS);
  EXPECT_EQ(errors, 0u);
  unsigned current_mode = 0, pending_mode = 0;
  // The H200 can run MIG; the profile has it switched off.
  EXPECT_EQ(api().device_get_mig_mode(gpu(0), &current_mode, &pending_mode), NVML_SUCCESS);
  EXPECT_EQ(current_mode, NVML_DEVICE_MIG_DISABLE);
  EXPECT_EQ(processes(gpu(0)), (Processes{{2210, 20480}}));
}

TEST_F(BuiltinProfileTest, A100MigLayouts) {
  start("a100-mig");
  ASSERT_EQ(count(), 8u);
  expect_uniform("NVIDIA A100-SXM4-80GB", 81920);
  EXPECT_EQ(topology_matrix(), every_pair("NV12", 8));
  // What go-nvlib would name each MIG device, by GPU.
  std::vector<std::vector<std::string>> layouts = {
      {"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"},
      {"3g.40gb", "2g.20gb", "1g.10gb"},
      {"3g.40gb", "3g.40gb"},
      {"4g.40gb", "2g.20gb", "1g.10gb"},
      {"1c.3g.40gb", "1c.3g.40gb"},
      {},
      {},
      {"7g.80gb"},
  };
  std::set<std::string> mig_uuids;
  for (unsigned g = 0; g < 8; ++g) {
    unsigned current = 9, pending = 9;
    ASSERT_EQ(api().device_get_mig_mode(gpu(g), &current, &pending), NVML_SUCCESS);
    EXPECT_EQ(current, layouts[g].empty() ? 0u : 1u) << "GPU " << g;
    unsigned max = 0;
    ASSERT_EQ(api().device_get_max_mig_device_count(gpu(g), &max), NVML_SUCCESS);
    EXPECT_EQ(max, 7u);
    std::vector<std::string> names;
    for (unsigned slot = 0; slot < max; ++slot) {
      nvmlDevice_t mig = nullptr;
      nvmlReturn_t result = api().device_get_mig_device_handle_by_index(gpu(g), slot, &mig);
      if (result == NVML_ERROR_NOT_FOUND) continue;
      ASSERT_EQ(result, NVML_SUCCESS);
      unsigned is_mig = 0;
      ASSERT_EQ(api().device_is_mig_device_handle(mig, &is_mig), NVML_SUCCESS);
      EXPECT_EQ(is_mig, 1u);
      nvmlDevice_t parent = nullptr;
      ASSERT_EQ(api().device_get_device_handle_from_mig_device_handle(mig, &parent), NVML_SUCCESS);
      EXPECT_EQ(parent, gpu(g));
      names.push_back(mig_profile_name(mig, parent));
      std::string uuid = uuid_of(mig);
      EXPECT_EQ(uuid.rfind("MIG-", 0), 0u);
      mig_uuids.insert(uuid);
      nvmlDevice_t by_uuid = nullptr;
      EXPECT_EQ(api().device_get_handle_by_uuid(uuid.c_str(), &by_uuid), NVML_SUCCESS);
      EXPECT_EQ(by_uuid, mig);
      EXPECT_EQ(name_of(mig), "NVIDIA A100-SXM4-80GB MIG " + names.back());
    }
    EXPECT_EQ(names, layouts[g]) << "GPU " << g;
  }
  EXPECT_EQ(mig_uuids.size(), 7u + 3 + 2 + 3 + 2 + 1);
  unsigned is_mig = 9;
  ASSERT_EQ(api().device_is_mig_device_handle(gpu(0), &is_mig), NVML_SUCCESS);
  EXPECT_EQ(is_mig, 0u);

  // GPU1's 3g.40gb (GI 2) runs a 12 GiB process; its memory and process list say so.
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(api().device_get_mig_device_handle_by_index(gpu(1), 0, &mig), NVML_SUCCESS);
  unsigned gi = 0, ci = 9;
  EXPECT_EQ(api().device_get_gpu_instance_id(mig, &gi), NVML_SUCCESS);
  EXPECT_EQ(api().device_get_compute_instance_id(mig, &ci), NVML_SUCCESS);
  EXPECT_EQ(gi, 2u);
  EXPECT_EQ(ci, 0u);
  nvmlDeviceAttributes_t attributes{};
  ASSERT_EQ(api().device_get_attributes(mig, &attributes), NVML_SUCCESS);
  EXPECT_EQ(attributes.multiprocessorCount, 42u);
  EXPECT_EQ(attributes.gpuInstanceSliceCount, 3u);
  EXPECT_EQ(attributes.memorySizeMB, 40192u);
  EXPECT_EQ(attributes.sharedCopyEngineCount, 3u);
  EXPECT_EQ(attributes.sharedDecoderCount, 2u);
  nvmlMemory_t memory{};
  ASSERT_EQ(api().device_get_memory_info(mig, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 40192ULL << 20);
  EXPECT_EQ(memory.used, 12301ULL << 20);
  nvmlProcessInfo_t process{};
  unsigned n = 1;
  ASSERT_EQ(api().device_get_compute_running_processes(mig, &n, &process), NVML_SUCCESS);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(process.pid, 41237u);
  EXPECT_EQ(process.gpuInstanceId, 2u);
  EXPECT_EQ(process.computeInstanceId, 0u);
  // The other instances on that GPU have none.
  nvmlDevice_t other = nullptr;
  ASSERT_EQ(api().device_get_mig_device_handle_by_index(gpu(1), 1, &other), NVML_SUCCESS);
  n = 0;
  EXPECT_EQ(api().device_get_compute_running_processes(other, &n, nullptr), NVML_SUCCESS);
  EXPECT_EQ(n, 0u);
  // Queries about the physical GPU are not answered for a MIG device; the parent is unaffected.
  unsigned temperature = 0;
  EXPECT_EQ(api().device_get_temperature(mig, NVML_TEMPERATURE_GPU, &temperature),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api().device_get_temperature(gpu(1), NVML_TEMPERATURE_GPU, &temperature), NVML_SUCCESS);
  EXPECT_EQ(api().device_get_gpu_instance_id(gpu(1), &gi), NVML_ERROR_NOT_SUPPORTED);
  nvmlDevice_t nothing = nullptr;
  EXPECT_EQ(api().device_get_mig_device_handle_by_index(gpu(1), 7, &nothing),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api().device_get_mig_device_handle_by_index(gpu(1), 5, &nothing), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(api().device_get_mig_device_handle_by_index(gpu(5), 0, &nothing), NVML_ERROR_NOT_FOUND);
}

// Each built-in profile reports the brand real GPUs of its product report on current drivers
// (sim/SOURCES.md), on every GPU and every MIG device, and gpunode's NVML layer names it as
// NVIDIA's DRA driver publishes it in the ResourceSlice attribute `brand`.
TEST_F(BuiltinProfileTest, EveryGpuReportsItsProductsBrand) {
  struct Brand {
    nvmlBrandType_t value;
    std::string dra_attribute;
  };
  const std::map<std::string, Brand> expected = {
      {"a10-pcie-4", {NVML_BRAND_NVIDIA, "Nvidia"}},  // NVIDIA A10
      {"a100-mig", {NVML_BRAND_NVIDIA, "Nvidia"}},    // NVIDIA A100-SXM4-80GB
      {"dgx-h100", {NVML_BRAND_NVIDIA, "Nvidia"}},    // NVIDIA H100 80GB HBM3
      {"dgx1-v100", {NVML_BRAND_TESLA, "Tesla"}},     // Tesla V100-SXM2-16GB
      {"h200-1", {NVML_BRAND_NVIDIA, "Nvidia"}},      // NVIDIA H200
  };
  std::string list = api().builtin_profiles();
  std::vector<std::string> profiles;
  for (size_t at = 0; at <= list.size();) {
    size_t comma = std::min(list.find(',', at), list.size());
    profiles.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  EXPECT_EQ(profiles.size(), expected.size());
  for (const std::string& profile : profiles) {
    SCOPED_TRACE(profile);
    auto it = expected.find(profile);
    ASSERT_NE(it, expected.end()) << "give the brand of the new profile's product here";
    start(profile);
    for (unsigned i = 0; i < count(); ++i) {
      nvmlBrandType_t brand = -1;
      ASSERT_EQ(api().device_get_brand(gpu(i), &brand), NVML_SUCCESS) << "GPU " << i;
      EXPECT_EQ(brand, it->second.value) << "GPU " << i;
      unsigned max = 0;
      if (api().device_get_max_mig_device_count(gpu(i), &max) != NVML_SUCCESS) continue;
      for (unsigned slot = 0; slot < max; ++slot) {
        nvmlDevice_t mig = nullptr;
        if (api().device_get_mig_device_handle_by_index(gpu(i), slot, &mig) != NVML_SUCCESS)
          continue;
        brand = -1;
        EXPECT_EQ(api().device_get_brand(mig, &brand), NVML_SUCCESS);
        EXPECT_EQ(brand, it->second.value) << "GPU " << i << " MIG device " << slot;
      }
    }
    {
      auto library = ::gpunode::nvml::Library::Open({.library_path = build_paths::kSimLibrary});
      ASSERT_TRUE(library.ok()) << library.status();
      absl::StatusOr<::gpunode::nvml::Device> device = ::gpunode::nvml::DeviceAt(**library, 0);
      ASSERT_TRUE(device.ok()) << device.status();
      absl::StatusOr<nvmlBrandType_t> brand = device->Brand();
      ASSERT_TRUE(brand.ok()) << brand.status();
      EXPECT_EQ(*brand, it->second.value);
      EXPECT_EQ(::gpunode::nvml::BrandName(*brand), it->second.dra_attribute);
    }
    TearDown();
  }
}

}  // namespace
}  // namespace gpunode::sim::testing
