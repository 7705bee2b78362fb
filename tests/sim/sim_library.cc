#include "sim_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "build_paths.h"

namespace gpunode::sim::testing {
namespace {

template <typename Fn>
void resolve(void* handle, Fn& out, const char* name) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
}

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start < list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string name = list.substr(start, comma - start);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (!name.empty()) names.push_back(name);
    start = comma + 1;
  }
  return names;
}

}  // namespace

Nvml& nvml() {
  static Nvml loaded = [] {
    Nvml api;
    api.handle = dlopen(build_paths::kSimLibrary, RTLD_NOW | RTLD_LOCAL);
    if (api.handle == nullptr) {
      ADD_FAILURE() << "dlopen " << build_paths::kSimLibrary << ": " << dlerror();
      return api;
    }
#define GPUNODE_SIM_TEST_RESOLVE(member, preferred, ...) \
  resolve(api.handle, api.member, #preferred);
    GPUNODE_NVML_ENTRY_POINTS(GPUNODE_SIM_TEST_RESOLVE)
#undef GPUNODE_SIM_TEST_RESOLVE
    resolve(api.handle, api.configure, "gpunodeSimConfigure");
    resolve(api.handle, api.builtin_profiles, "gpunodeSimBuiltinProfiles");
    return api;
  }();
  return loaded;
}

std::vector<std::string> entry_point_names() {
  std::vector<std::string> names;
#define GPUNODE_SIM_TEST_NAMES(member, ...)                   \
  for (const std::string& name : split_names(#__VA_ARGS__)) { \
    names.push_back(name);                                    \
  }
  GPUNODE_NVML_ENTRY_POINTS(GPUNODE_SIM_TEST_NAMES)
#undef GPUNODE_SIM_TEST_NAMES
  return names;
}

std::string configure(const std::string& spec, const std::string& topology) {
  char error[1024] = "";
  int result = nvml().configure(spec.c_str(), topology.empty() ? nullptr : topology.c_str(), error,
                                sizeof error);
  if (result == 0) return "";
  return error[0] != '\0' ? std::string(error) : "(non-zero without a message)";
}

void SimTest::TearDown() {
  if (nvml().shutdown == nullptr) return;
  while (nvml().shutdown() == NVML_SUCCESS) {
  }
}

void SimTest::start(const std::string& spec, const std::string& topology) {
  ASSERT_NE(nvml().handle, nullptr);
  ASSERT_EQ(configure(spec, topology), "");
  ASSERT_EQ(nvml().init(), NVML_SUCCESS);
}

nvmlDevice_t SimTest::gpu(unsigned index) {
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvml().device_get_handle_by_index(index, &device), NVML_SUCCESS) << "GPU " << index;
  return device;
}

std::string name_of(nvmlDevice_t device) {
  char name[NVML_DEVICE_NAME_BUFFER_SIZE] = "";
  EXPECT_EQ(nvml().device_get_name(device, name, sizeof name), NVML_SUCCESS);
  return name;
}

std::string uuid_of(nvmlDevice_t device) {
  char uuid[NVML_DEVICE_UUID_BUFFER_SIZE] = "";
  EXPECT_EQ(nvml().device_get_uuid(device, uuid, sizeof uuid), NVML_SUCCESS);
  return uuid;
}

std::string bus_id_of(nvmlDevice_t device) {
  nvmlPciInfo_t pci{};
  EXPECT_EQ(nvml().device_get_pci_info(device, &pci), NVML_SUCCESS);
  return pci.busId;
}

namespace {

// The bus ids at the far end of a GPU's active NVLinks, one entry per link.
std::vector<std::string> nvlink_remotes(nvmlDevice_t device) {
  std::vector<std::string> remotes;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    nvmlReturn_t result = nvml().device_get_nvlink_state(device, link, &active);
    if (result == NVML_ERROR_NOT_SUPPORTED || result == NVML_ERROR_INVALID_ARGUMENT) continue;
    EXPECT_EQ(result, NVML_SUCCESS);
    if (active != NVML_FEATURE_ENABLED) continue;
    nvmlPciInfo_t pci{};
    EXPECT_EQ(nvml().device_get_nvlink_remote_pci_info(device, link, &pci), NVML_SUCCESS);
    remotes.push_back(pci.busId);
  }
  return remotes;
}

}  // namespace

std::string topology_label(const std::vector<nvmlDevice_t>& gpus, size_t a, size_t b) {
  if (a == b) return "X";
  std::set<std::string> gpu_bus_ids;
  for (nvmlDevice_t device : gpus) gpu_bus_ids.insert(bus_id_of(device));
  std::string bus_b = bus_id_of(gpus[b]);
  std::vector<std::string> remotes_a = nvlink_remotes(gpus[a]);
  std::vector<std::string> remotes_b = nvlink_remotes(gpus[b]);
  int direct = 0;
  std::map<std::string, int> a_switch_links;
  for (const std::string& remote : remotes_a) {
    if (remote == bus_b) {
      ++direct;
    } else if (!gpu_bus_ids.contains(remote)) {
      ++a_switch_links[remote];
    }
  }
  std::set<std::string> b_switches(remotes_b.begin(), remotes_b.end());
  int a_shared = 0;
  for (const auto& [sw, count] : a_switch_links) {
    if (b_switches.contains(sw)) a_shared += count;
  }
  int b_shared = 0;
  for (const std::string& remote : remotes_b) {
    if (a_switch_links.contains(remote)) ++b_shared;
  }
  int links = direct + std::min(a_shared, b_shared);
  if (links > 0) return "NV" + std::to_string(links);
  nvmlGpuTopologyLevel_t level{};
  nvmlReturn_t result = nvml().device_get_topology_common_ancestor(gpus[a], gpus[b], &level);
  if (result != NVML_SUCCESS) return std::string("error:") + nvml().error_string(result);
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
      return "X";
    case NVML_TOPOLOGY_SINGLE:
      return "PIX";
    case NVML_TOPOLOGY_MULTIPLE:
      return "PXB";
    case NVML_TOPOLOGY_HOSTBRIDGE:
      return "PHB";
    case NVML_TOPOLOGY_NODE:
      return "NODE";
    case NVML_TOPOLOGY_SYSTEM:
      return "SYS";
    default:
      return "level:" + std::to_string(level);
  }
}

std::vector<std::string> topology_matrix() {
  unsigned count = 0;
  EXPECT_EQ(nvml().device_get_count(&count), NVML_SUCCESS);
  std::vector<nvmlDevice_t> gpus(count);
  for (unsigned i = 0; i < count; ++i)
    EXPECT_EQ(nvml().device_get_handle_by_index(i, &gpus[i]), NVML_SUCCESS);
  std::vector<std::string> rows;
  for (size_t a = 0; a < count; ++a) {
    std::string row;
    for (size_t b = 0; b < count; ++b) row += (b ? " " : "") + topology_label(gpus, a, b);
    rows.push_back(row);
  }
  return rows;
}

std::string mig_profile_name(nvmlDevice_t mig, nvmlDevice_t parent) {
  nvmlDeviceAttributes_t attributes{};
  EXPECT_EQ(nvml().device_get_attributes(mig, &attributes), NVML_SUCCESS);
  nvmlMemory_t memory{};
  EXPECT_EQ(nvml().device_get_memory_info(parent, &memory), NVML_SUCCESS);
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr unsigned long long kGiB = 1ULL << 30;
  double fraction =
      static_cast<double>(attributes.memorySizeMB) * kMiB / static_cast<double>(memory.total);
  fraction = std::ceil(fraction * 8.0) / 8.0;
  double parent_gb = static_cast<double>((memory.total + kGiB - 1) / kGiB);
  std::string name = std::to_string(attributes.gpuInstanceSliceCount) + "g." +
                     std::to_string(std::llround(fraction * parent_gb)) + "gb";
  if (attributes.computeInstanceSliceCount < attributes.gpuInstanceSliceCount) {
    name = std::to_string(attributes.computeInstanceSliceCount) + "c." + name;
  }
  return name;
}

namespace {

std::filesystem::path temp_root() {
  return std::filesystem::temp_directory_path() /
         ("gpunode-sim-tests-" + std::to_string(::getpid()));
}

// Removes the files the tests of this process wrote.
class TempFiles : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(temp_root(), ignored);
  }
};
[[maybe_unused]] ::testing::Environment* const kTempFiles =
    ::testing::AddGlobalTestEnvironment(new TempFiles);

}  // namespace

std::string write_file(const std::string& name, const std::string& text) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir = temp_root() / info->name();
  std::filesystem::create_directories(dir);
  std::filesystem::path path = dir / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

std::string fixture(const std::string& name) {
  std::filesystem::path path = std::filesystem::path(build_paths::kSimFixtures) / name;
  if (!std::filesystem::exists(path)) {
    ADD_FAILURE() << "fixture " << path << " is missing from tests/fixtures/nvidia-smi-xml";
  }
  return std::filesystem::weakly_canonical(path).string();
}

}  // namespace gpunode::sim::testing
