// Replaying the real `nvidia-smi -q -x` captures in tests/fixtures/nvidia-smi-xml: every value
// NVML gives back is the one read off the XML by hand and written down here. An empty optional
// means the capture says N/A or has no such element, so NVML must answer NOT_SUPPORTED.
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "build_paths.h"
#include "sim_library.h"

namespace gpunode::sim::testing {
namespace {

using std::nullopt;
using U = std::optional<unsigned>;
using ULL = std::optional<unsigned long long>;
using S = std::optional<std::string>;

constexpr unsigned long long MiB = 1ULL << 20;

struct Memory {
  unsigned long long total_mib, reserved_mib, used_mib, free_mib;
};

struct Expected {
  std::string file;
  S driver;
  std::optional<int> cuda;
  S nvml_version;
  S name;
  S uuid;
  S serial;
  U minor;
  S bus_id;
  unsigned pci_device_id;
  unsigned pci_subsystem_id;
  std::optional<bool> persistence;
  std::optional<bool> mig;
  U fan;
  U pstate;
  std::optional<Memory> memory;
  std::optional<std::pair<unsigned, unsigned>> utilization;  // gpu, memory
  U encoder;
  U decoder;
  std::optional<bool> ecc;
  ULL corrected_volatile, uncorrected_volatile, corrected_aggregate, uncorrected_aggregate;
  std::optional<std::pair<unsigned, unsigned>> retired_pages;  // single-bit, double-bit counts
  std::optional<std::array<unsigned, 4>> remapped_rows;
  U temperature;
  U power_mw;
  U power_limit_mw;
  std::array<U, 4> clocks;  // graphics, SM, memory, video
  std::array<U, 4> max_clocks;
  U replay;
  U architecture;
  std::optional<std::pair<int, int>> compute_capability;
  unsigned compute_processes;
  std::optional<nvmlBrandType_t> brand;  // <product_brand>
};

// Values read off the fixture files by hand.
const Expected kCaptures[] = {
    {"a100-sxm4-mig.xml",
     "510.47.03",
     11060,
     "11.510.47.03",
     "NVIDIA A100-SXM4-40GB",
     "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a",
     "1324321002473",
     0u,
     "00000000:00:04.0",
     0x20B010DE,
     0x134F10DE,
     false,
     true,
     nullopt,
     0u,
     Memory{40960, 605, 38, 40315},
     nullopt,
     nullopt,
     nullopt,
     true,
     nullopt,
     nullopt,
     0ULL,
     0ULL,
     nullopt,
     nullopt,
     36u,
     66920u,
     400000u,
     {1410u, 1410u, 1215u, 1275u},
     {1410u, 1410u, 1215u, 1290u},
     0u,
     7u,
     std::pair{8, 0},
     0,
     NVML_BRAND_NVIDIA},
    {"tesla-p100.xml",
     "510.47.03",
     11060,
     "11.510.47.03",
     "Tesla P100-PCIE-16GB",
     "GPU-d3da8716-eaab-75db-efc1-60e88e1cd55e",
     "0324217145110",
     0u,
     "00000000:00:04.0",
     0x15F810DE,
     0x118F10DE,
     false,
     nullopt,
     nullopt,
     0u,
     Memory{16384, 103, 0, 16280},
     std::pair{0u, 0u},
     0u,
     0u,
     true,
     0ULL,
     0ULL,
     3ULL,
     0ULL,
     std::pair{0u, 0u},
     nullopt,
     38u,
     26160u,
     250000u,
     {405u, 405u, 715u, 835u},
     {1328u, 1328u, 715u, 1328u},
     0u,
     4u,
     std::pair{6, 0},
     0,
     NVML_BRAND_TESLA},
    {"rtx-4090-driver-535.xml",
     "535.86.05",
     12020,
     "12.535.86.05",
     "NVIDIA GeForce RTX 4090",
     "GPU-71d1acc2-662d-2166-bf9f-65272d2fc437",
     nullopt,
     0u,
     "00000000:84:00.0",
     0x268410DE,
     0x40BF1458,
     true,
     nullopt,
     0u,
     8u,
     Memory{24564, 346, 2, 24214},
     std::pair{0u, 0u},
     0u,
     0u,
     false,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     std::array<unsigned, 4>{0, 0, 0, 0},
     40u,
     26840u,
     450000u,
     {210u, 210u, 405u, 1185u},
     {3120u, 3120u, 10501u, 2415u},
     0u,
     8u,
     std::pair{8, 9},
     0,
     NVML_BRAND_GEFORCE},
    {"rtx-3060.xml",
     "515.65.01",
     11070,
     "11.515.65.01",
     "NVIDIA GeForce RTX 3060 Laptop GPU",
     "GPU-473d8d0f-d462-185c-6b36-6fc23e23e571",
     nullopt,
     0u,
     "00000000:01:00.0",
     0x252010DE,
     0x0A831028,
     false,
     nullopt,
     nullopt,
     8u,
     Memory{6144, 197, 5, 5940},
     std::pair{0u, 0u},
     0u,
     0u,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     45u,
     8700u,
     nullopt,
     {210u, 210u, 405u, 555u},
     {2100u, 2100u, 6001u, 1950u},
     0u,
     7u,
     std::pair{8, 6},
     0,  // its only process is Xorg, type G: not a compute process
     NVML_BRAND_GEFORCE},
    {"rtx-2080-win.xml",
     "516.59",
     11070,
     "11.516.59",
     "NVIDIA GeForce RTX 2080",
     "GPU-fbd55ed4-1eec-4423-0a47-ad594b4333e3",
     nullopt,
     nullopt,
     "00000000:0A:00.0",
     0x1E8710DE,
     0x37AF1458,
     nullopt,
     nullopt,
     37u,
     8u,
     Memory{8192, 182, 862, 7147},
     std::pair{2u, 7u},
     0u,
     0u,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     29u,
     14500u,
     275000u,
     {193u, 193u, 403u, 539u},
     {3060u, 3060u, 7560u, 1950u},
     0u,
     6u,
     std::pair{7, 5},
     26,
     NVML_BRAND_GEFORCE},
    // A hand-reduced excerpt: no driver, no PCI block (the bus id is the <gpu id> attribute),
    // values padded with spaces, power draw N/A.
    {"rtx-pro-6000-driver-580.xml",
     nullopt,
     nullopt,
     nullopt,
     "NVIDIA RTX PRO 6000 Blackwell",
     "GPU-11111111-2222-3333-4444-555555555555",
     nullopt,
     nullopt,
     "00000000:01:00.0",
     0,
     0,
     nullopt,
     nullopt,
     40u,
     8u,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     nullopt,
     37u,
     nullopt,
     nullopt,
     {},
     {},
     nullopt,
     nullopt,
     nullopt,
     0,
     nullopt},
};

// Names the case by its file in test listings instead of dumping the struct's bytes.
void PrintTo(const Expected& expected, std::ostream* out) { *out << expected.file; }

class CaptureTest : public SimTest, public ::testing::WithParamInterface<Expected> {};

template <typename T, typename Call>
void expect_value(const std::optional<T>& expected, Call call, const char* what) {
  T value{};
  nvmlReturn_t result = call(&value);
  if (expected) {
    EXPECT_EQ(result, NVML_SUCCESS) << what << ": " << nvml().error_string(result);
    EXPECT_EQ(value, *expected) << what;
  } else {
    EXPECT_EQ(result, NVML_ERROR_NOT_SUPPORTED) << what << " should be NOT_SUPPORTED";
  }
}

void expect_string(const S& expected, nvmlReturn_t (*call)(nvmlDevice_t, char*, unsigned),
                   nvmlDevice_t device, const char* what) {
  char text[96] = "";
  nvmlReturn_t result = call(device, text, sizeof text);
  if (expected) {
    EXPECT_EQ(result, NVML_SUCCESS) << what;
    EXPECT_EQ(std::string(text), *expected) << what;
  } else {
    EXPECT_EQ(result, NVML_ERROR_NOT_SUPPORTED) << what;
  }
}

TEST_P(CaptureTest, EveryValueComesBack) {
  const Expected& e = GetParam();
  start(fixture(e.file));
  Nvml& n = api();
  unsigned count = 0;
  ASSERT_EQ(n.device_get_count(&count), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  nvmlDevice_t d = gpu(0);

  char text[96];
  nvmlReturn_t result = n.system_get_driver_version(text, sizeof text);
  if (e.driver) {
    EXPECT_EQ(result, NVML_SUCCESS);
    EXPECT_EQ(std::string(text), *e.driver);
  } else {
    EXPECT_EQ(result, NVML_ERROR_NOT_SUPPORTED);
  }
  result = n.system_get_nvml_version(text, sizeof text);
  if (e.nvml_version) {
    EXPECT_EQ(result, NVML_SUCCESS);
    EXPECT_EQ(std::string(text), *e.nvml_version);
  } else {
    EXPECT_EQ(result, NVML_ERROR_NOT_SUPPORTED);
  }
  expect_value<int>(
      e.cuda, [&](int* v) { return n.system_get_cuda_driver_version(v); }, "CUDA version");
  expect_string(e.name, n.device_get_name, d, "name");
  expect_string(e.uuid, n.device_get_uuid, d, "uuid");
  expect_string(e.serial, n.device_get_serial, d, "serial");
  expect_value<unsigned>(
      e.minor, [&](unsigned* v) { return n.device_get_minor_number(d, v); }, "minor number");

  nvmlPciInfo_t pci{};
  ASSERT_EQ(n.device_get_pci_info(d, &pci), NVML_SUCCESS);
  EXPECT_EQ(std::string(pci.busId), *e.bus_id);
  EXPECT_EQ(std::string(pci.busIdLegacy), e.bus_id->substr(4));
  EXPECT_EQ(pci.pciDeviceId, e.pci_device_id);
  EXPECT_EQ(pci.pciSubSystemId, e.pci_subsystem_id);
  EXPECT_EQ(pci.domain, 0u);

  expect_value<nvmlEnableState_t>(
      e.persistence
          ? std::optional(e.persistence.value() ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED)
          : nullopt,
      [&](nvmlEnableState_t* v) { return n.device_get_persistence_mode(d, v); },
      "persistence mode");
  expect_value<unsigned>(
      e.mig ? std::optional(e.mig.value() ? 1u : 0u) : nullopt,
      [&](unsigned* v) {
        unsigned pending = 0;
        return n.device_get_mig_mode(d, v, &pending);
      },
      "MIG mode");
  expect_value<unsigned>(
      e.fan, [&](unsigned* v) { return n.device_get_fan_speed(d, v); }, "fan");
  expect_value<nvmlPstates_t>(
      e.pstate ? std::optional(static_cast<nvmlPstates_t>(*e.pstate)) : nullopt,
      [&](nvmlPstates_t* v) { return n.device_get_performance_state(d, v); }, "pstate");

  nvmlMemory_t memory{};
  nvmlMemory_v2_t memory2{};
  memory2.version = kNvmlMemoryV2Version;
  if (e.memory) {
    ASSERT_EQ(n.device_get_memory_info(d, &memory), NVML_SUCCESS);
    EXPECT_EQ(memory.total, e.memory->total_mib * MiB);
    EXPECT_EQ(memory.used, (e.memory->used_mib + e.memory->reserved_mib) * MiB);
    EXPECT_EQ(memory.free, e.memory->free_mib * MiB);
    ASSERT_EQ(n.device_get_memory_info_v2(d, &memory2), NVML_SUCCESS);
    EXPECT_EQ(memory2.total, e.memory->total_mib * MiB);
    EXPECT_EQ(memory2.reserved, e.memory->reserved_mib * MiB);
    EXPECT_EQ(memory2.used, e.memory->used_mib * MiB);
    EXPECT_EQ(memory2.free, e.memory->free_mib * MiB);
  } else {
    EXPECT_EQ(n.device_get_memory_info(d, &memory), NVML_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(n.device_get_memory_info_v2(d, &memory2), NVML_ERROR_NOT_SUPPORTED);
  }

  nvmlUtilization_t utilization{};
  result = n.device_get_utilization_rates(d, &utilization);
  if (e.utilization) {
    EXPECT_EQ(result, NVML_SUCCESS);
    EXPECT_EQ(utilization.gpu, e.utilization->first);
    EXPECT_EQ(utilization.memory, e.utilization->second);
  } else {
    EXPECT_EQ(result, NVML_ERROR_NOT_SUPPORTED);
  }
  unsigned period = 0;
  expect_value<unsigned>(
      e.encoder, [&](unsigned* v) { return n.device_get_encoder_utilization(d, v, &period); },
      "encoder utilization");
  expect_value<unsigned>(
      e.decoder, [&](unsigned* v) { return n.device_get_decoder_utilization(d, v, &period); },
      "decoder utilization");

  expect_value<nvmlEnableState_t>(
      e.ecc ? std::optional(e.ecc.value() ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED) : nullopt,
      [&](nvmlEnableState_t* v) {
        nvmlEnableState_t pending{};
        return n.device_get_ecc_mode(d, v, &pending);
      },
      "ECC mode");
  auto ecc = [&](nvmlMemoryErrorType_t type, nvmlEccCounterType_t counter) {
    return [&n, d, type, counter](unsigned long long* v) {
      return n.device_get_total_ecc_errors(d, type, counter, v);
    };
  };
  expect_value(e.corrected_volatile, ecc(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC),
               "corrected volatile");
  expect_value(e.uncorrected_volatile, ecc(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC),
               "uncorrected volatile");
  expect_value(e.corrected_aggregate, ecc(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC),
               "corrected aggregate");
  expect_value(e.uncorrected_aggregate, ecc(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC),
               "uncorrected aggregate");

  unsigned pages = 0;
  result = n.device_get_retired_pages(d, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                                      &pages, nullptr);
  if (e.retired_pages) {
    EXPECT_EQ(result, NVML_SUCCESS);
    EXPECT_EQ(pages, e.retired_pages->first);
    result = n.device_get_retired_pages(d, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &pages,
                                        nullptr);
    EXPECT_EQ(pages, e.retired_pages->second);
  } else {
    EXPECT_EQ(result, NVML_ERROR_NOT_SUPPORTED) << "retired pages";
  }
  std::array<unsigned, 4> rows{9, 9, 9, 9};
  result = n.device_get_remapped_rows(d, &rows[0], &rows[1], &rows[2], &rows[3]);
  if (e.remapped_rows) {
    EXPECT_EQ(result, NVML_SUCCESS);
    EXPECT_EQ(rows, *e.remapped_rows);
  } else {
    EXPECT_EQ(result, NVML_ERROR_NOT_SUPPORTED) << "remapped rows";
  }

  expect_value<unsigned>(
      e.temperature,
      [&](unsigned* v) { return n.device_get_temperature(d, NVML_TEMPERATURE_GPU, v); },
      "temperature");
  expect_value<unsigned>(
      e.power_mw, [&](unsigned* v) { return n.device_get_power_usage(d, v); }, "power draw");
  expect_value<unsigned>(
      e.power_limit_mw, [&](unsigned* v) { return n.device_get_enforced_power_limit(d, v); },
      "power limit");
  expect_value<unsigned long long>(
      nullopt, [&](unsigned long long* v) { return n.device_get_total_energy_consumption(d, v); },
      "energy (captures have none)");
  for (int type = 0; type < 4; ++type) {
    expect_value<unsigned>(
        e.clocks[type], [&](unsigned* v) { return n.device_get_clock_info(d, type, v); }, "clock");
    expect_value<unsigned>(
        e.max_clocks[type], [&](unsigned* v) { return n.device_get_max_clock_info(d, type, v); },
        "max clock");
  }
  expect_value<unsigned>(
      e.replay, [&](unsigned* v) { return n.device_get_pcie_replay_counter(d, v); },
      "replay counter");
  expect_value<unsigned>(
      e.architecture, [&](unsigned* v) { return n.device_get_architecture(d, v); }, "architecture");
  expect_value<nvmlBrandType_t>(
      e.brand, [&](nvmlBrandType_t* v) { return n.device_get_brand(d, v); }, "brand");
  int major = 0, minor = 0;
  result = n.device_get_cuda_compute_capability(d, &major, &minor);
  if (e.compute_capability) {
    EXPECT_EQ(result, NVML_SUCCESS);
    EXPECT_EQ(std::pair(major, minor), *e.compute_capability);
  } else {
    EXPECT_EQ(result, NVML_ERROR_NOT_SUPPORTED);
  }
  // Captures do not say which NUMA node a GPU is on.
  unsigned node = 0;
  EXPECT_EQ(n.device_get_numa_node_id(d, &node), NVML_ERROR_NOT_SUPPORTED);
  unsigned processes = 0;
  result = n.device_get_compute_running_processes(d, &processes, nullptr);
  EXPECT_EQ(result, e.compute_processes == 0 ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(processes, e.compute_processes);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CaptureTest, ::testing::ValuesIn(kCaptures),
                         [](const ::testing::TestParamInfo<Expected>& info) {
                           std::string name = info.param.file.substr(0, info.param.file.find('.'));
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

class CaptureDetailTest : public SimTest {};

TEST_F(CaptureDetailTest, WindowsProcessesHaveNoMemoryFigure) {
  start(fixture("rtx-2080-win.xml"));
  const unsigned pids[] = {7724,  10808, 11556, 12452, 12636, 13120, 14296, 16508, 16592,
                           20920, 21004, 21036, 21048, 21104, 21292, 21472, 21852, 22600,
                           23652, 25436, 25520, 25696, 26972, 27148, 27628, 30212};
  nvmlProcessInfo_t infos[32]{};
  unsigned count = 32;
  ASSERT_EQ(api().device_get_compute_running_processes(gpu(0), &count, infos), NVML_SUCCESS);
  ASSERT_EQ(count, 26u);
  for (unsigned i = 0; i < count; ++i) {
    EXPECT_EQ(infos[i].pid, pids[i]);
    EXPECT_EQ(infos[i].usedGpuMemory, kNvmlValueNotAvailable);
    EXPECT_EQ(infos[i].gpuInstanceId, kNvmlNoInstanceId);
    EXPECT_EQ(infos[i].computeInstanceId, kNvmlNoInstanceId);
  }
  count = 25;
  EXPECT_EQ(api().device_get_compute_running_processes(gpu(0), &count, infos),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 26u);
}

TEST_F(CaptureDetailTest, A100MigDevices) {
  start(fixture("a100-sxm4-mig.xml"));
  nvmlDevice_t parent = gpu(0);
  unsigned max = 0;
  ASSERT_EQ(api().device_get_max_mig_device_count(parent, &max), NVML_SUCCESS);
  EXPECT_EQ(max, 7u);
  for (unsigned slot = 0; slot < 2; ++slot) {
    nvmlDevice_t mig = nullptr;
    ASSERT_EQ(api().device_get_mig_device_handle_by_index(parent, slot, &mig), NVML_SUCCESS);
    unsigned gi = 0, ci = 9;
    EXPECT_EQ(api().device_get_gpu_instance_id(mig, &gi), NVML_SUCCESS);
    EXPECT_EQ(gi, slot + 1);
    EXPECT_EQ(api().device_get_compute_instance_id(mig, &ci), NVML_SUCCESS);
    EXPECT_EQ(ci, 0u);
    nvmlDeviceAttributes_t a{};
    ASSERT_EQ(api().device_get_attributes(mig, &a), NVML_SUCCESS);
    EXPECT_EQ(a.multiprocessorCount, 42u);
    EXPECT_EQ(a.sharedCopyEngineCount, 3u);
    EXPECT_EQ(a.sharedEncoderCount, 0u);
    EXPECT_EQ(a.sharedDecoderCount, 2u);
    EXPECT_EQ(a.sharedOfaCount, 0u);
    EXPECT_EQ(a.sharedJpegCount, 0u);
    EXPECT_EQ(a.memorySizeMB, 19968u);
    EXPECT_EQ(a.gpuInstanceSliceCount, 3u);
    EXPECT_EQ(a.computeInstanceSliceCount, 3u);
    EXPECT_EQ(mig_profile_name(mig, parent), "3g.20gb");
    EXPECT_EQ(name_of(mig), "NVIDIA A100-SXM4-40GB MIG 3g.20gb");
    nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
    EXPECT_EQ(api().device_get_brand(mig, &brand), NVML_SUCCESS);
    EXPECT_EQ(brand, NVML_BRAND_NVIDIA);  // the parent's
    nvmlMemory_t memory{};
    ASSERT_EQ(api().device_get_memory_info(mig, &memory), NVML_SUCCESS);
    EXPECT_EQ(memory.total, 19968 * MiB);
    EXPECT_EQ(memory.used, 19 * MiB);
    EXPECT_EQ(memory.free, 19948 * MiB);
    // MIG UUIDs are not in the capture; they are derived, the same on every run.
    std::string uuid = uuid_of(mig);
    EXPECT_EQ(uuid.rfind("MIG-", 0), 0u);
    EXPECT_EQ(uuid.size(), 40u);
  }
  nvmlDevice_t none = nullptr;
  EXPECT_EQ(api().device_get_mig_device_handle_by_index(parent, 2, &none), NVML_ERROR_NOT_FOUND);
  // <memory_temp>44 C</memory_temp>
  nvmlFieldValue_t field{};
  field.fieldId = NVML_FI_DEV_MEMORY_TEMP;
  ASSERT_EQ(api().device_get_field_values(parent, 1, &field), NVML_SUCCESS);
  EXPECT_EQ(field.nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(field.value.uiVal, 44u);
}

// Every capture in the fixtures, those added later included: NVML's brand, in nvidia-smi's words,
// is the capture's <product_brand>; a capture without one reports none.
TEST_F(CaptureDetailTest, BrandIsTheCapturesProductBrand) {
  const std::map<nvmlBrandType_t, std::string> smi_words = {
      {NVML_BRAND_NVIDIA, "NVIDIA"},
      {NVML_BRAND_TESLA, "Tesla"},
      {NVML_BRAND_GEFORCE, "GeForce"},
      {NVML_BRAND_QUADRO, "Quadro"},
      {NVML_BRAND_TITAN, "Titan"},
      {NVML_BRAND_NVIDIA_RTX, "NVIDIA RTX"},
      {NVML_BRAND_NVIDIA_VWS, "NVIDIA RTX Virtual Workstation"},
      {NVML_BRAND_NVIDIA_VCS, "NVIDIA Virtual Compute Server"},
  };
  size_t captures = 0;
  for (const auto& entry : std::filesystem::directory_iterator(build_paths::kSimFixtures)) {
    if (entry.path().extension() != ".xml") continue;
    ++captures;
    std::string file = entry.path().filename().string();
    SCOPED_TRACE(file);
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    std::string xml = text.str();
    std::optional<std::string> stated;
    const std::string open = "<product_brand>";
    if (size_t at = xml.find(open); at != std::string::npos) {
      at += open.size();
      stated = xml.substr(at, xml.find("</product_brand>", at) - at);
    }
    start(fixture(file));
    nvmlBrandType_t brand = -1;
    nvmlReturn_t result = api().device_get_brand(gpu(0), &brand);
    if (stated) {
      ASSERT_EQ(result, NVML_SUCCESS);
      ASSERT_TRUE(smi_words.contains(brand)) << "brand " << brand;
      EXPECT_EQ(smi_words.at(brand), *stated);
    } else {
      EXPECT_EQ(result, NVML_ERROR_NOT_SUPPORTED);
    }
    TearDown();
  }
  EXPECT_GE(captures, 6u);
}

TEST_F(CaptureDetailTest, MemoryTemperatureNotAvailable) {
  for (const char* file : {"tesla-p100.xml", "rtx-4090-driver-535.xml", "rtx-2080-win.xml",
                           "rtx-3060.xml", "rtx-pro-6000-driver-580.xml"}) {
    ASSERT_EQ(configure(fixture(file)), "");
    ASSERT_EQ(api().init(), NVML_SUCCESS);
    nvmlFieldValue_t field{};
    field.fieldId = NVML_FI_DEV_MEMORY_TEMP;
    ASSERT_EQ(api().device_get_field_values(gpu(0), 1, &field), NVML_SUCCESS) << file;
    EXPECT_EQ(field.nvmlReturn, NVML_ERROR_NOT_SUPPORTED)
        << file;  // <memory_temp>N/A</memory_temp>
    ASSERT_EQ(api().shutdown(), NVML_SUCCESS);
  }
}

TEST_F(CaptureDetailTest, SeveralGpusAndTextAcrossLineBreaks) {
  std::string gpu_template = R"(
  <gpu id="00000000:%BUS%:00.0">
    <product_name>NVIDIA
      A100-SXM4-40GB</product_name>
    <uuid>GPU-%UUID%-ed54-5c24-b1fd-1054085de32a</uuid>
    <pci><pci_bus_id>00000000:%BUS%:00.0</pci_bus_id><pci_device_id>20B010DE</pci_device_id></pci>
    <temperature><gpu_temp>
        4%BUS% C
    </gpu_temp></temperature>
    <fb_memory_usage><total>40960 MiB</total><used>3 MiB</used></fb_memory_usage>
  </gpu>)";
  std::string xml =
      "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<driver_version>550.54.15</driver_version>\n";
  for (std::string bus : {"1", "2", "3"}) {
    std::string g = gpu_template;
    for (size_t at; (at = g.find("%BUS%")) != std::string::npos;) g.replace(at, 5, bus);
    g.replace(g.find("%UUID%"), 6, "0000000" + bus);
    xml += g;
  }
  xml += "</nvidia_smi_log>";
  start(write_file("three.xml", xml));
  unsigned count = 0;
  ASSERT_EQ(api().device_get_count(&count), NVML_SUCCESS);
  ASSERT_EQ(count, 3u);
  for (unsigned i = 0; i < 3; ++i) {
    unsigned temperature = 0;
    ASSERT_EQ(api().device_get_temperature(gpu(i), NVML_TEMPERATURE_GPU, &temperature),
              NVML_SUCCESS);
    EXPECT_EQ(temperature, 41u + i);
    EXPECT_EQ(uuid_of(gpu(i)),
              "GPU-0000000" + std::to_string(i + 1) + "-ed54-5c24-b1fd-1054085de32a");
    EXPECT_EQ(bus_id_of(gpu(i)), "00000000:0" + std::to_string(i + 1) + ":00.0");
    // The line break inside the name stays: NVML reports text as the driver wrote it.
    EXPECT_EQ(name_of(gpu(i)).substr(0, 6), "NVIDIA");
    nvmlMemory_v2_t memory{};
    memory.version = kNvmlMemoryV2Version;
    ASSERT_EQ(api().device_get_memory_info_v2(gpu(i), &memory), NVML_SUCCESS);
    EXPECT_EQ(memory.reserved, 0u);  // old schemas have no reserved figure
    EXPECT_EQ(memory.free, (40960 - 3) * MiB);
  }
  // Without a topology capture, NVML cannot say how two GPUs of a capture are connected.
  nvmlGpuTopologyLevel_t level{};
  EXPECT_EQ(api().device_get_topology_common_ancestor(gpu(0), gpu(1), &level),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api().device_get_topology_common_ancestor(gpu(0), gpu(0), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_INTERNAL);
  int cuda = 0;
  EXPECT_EQ(api().system_get_cuda_driver_version(&cuda), NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(CaptureDetailTest, TopologyCaptureGivesNumaNodes) {
  std::string topology =
      write_file("topo.txt",
                 "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
                 "GPU0\t X \t0-15,32-47\t1\t\tN/A\n\nLegend:\n\n  X    = Self\n");
  start(fixture("tesla-p100.xml"), topology);
  unsigned node = 9;
  ASSERT_EQ(api().device_get_numa_node_id(gpu(0), &node), NVML_SUCCESS);
  EXPECT_EQ(node, 1u);
}

}  // namespace
}  // namespace gpunode::sim::testing
