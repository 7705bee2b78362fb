// The simulator's MIG management through NVML's C ABI, loaded with dlopen as production code
// loads the driver: profile tables, placements, instance ids, pending modes, refusals and the
// state file that carries a layout from one process to the next.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "build_paths.h"
#include "sim_library.h"

namespace gpunode::sim::testing {
namespace {

const std::string kCapable = std::string(build_paths::kMigFixtures) + "/mig-capable-gpus.yaml";
enum Gpu : unsigned { kA100_40, kA100_80, kA30, kH100_80, kH100_94, kH200 };

class MigSimTest : public SimTest {
 protected:
  void TearDown() override {
    unsetenv("GPUNODE_SIM_STATE");
    unsetenv("GPUNODE_SIM_MIG_FAIL_AT");
    SimTest::TearDown();
  }
  void enable(nvmlDevice_t device) {
    nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
    ASSERT_EQ(api().device_set_mig_mode(device, NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
    ASSERT_EQ(activation, NVML_SUCCESS);
  }
  nvmlGpuInstanceProfileInfo_v2_t profile(nvmlDevice_t device, unsigned index,
                                          nvmlReturn_t expect = NVML_SUCCESS) {
    nvmlGpuInstanceProfileInfo_v2_t info{};
    info.version = kNvmlGpuInstanceProfileInfoV2Version;
    EXPECT_EQ(api().device_get_gpu_instance_profile_info_v(device, index, &info), expect)
        << "profile index " << index;
    return info;
  }
  nvmlGpuInstance_t create(nvmlDevice_t device, unsigned profile_id, unsigned start, unsigned size,
                           nvmlReturn_t expect = NVML_SUCCESS) {
    nvmlGpuInstancePlacement_t placement{start, size};
    nvmlGpuInstance_t gi = nullptr;
    EXPECT_EQ(api().device_create_gpu_instance_with_placement(device, profile_id, &placement, &gi),
              expect)
        << "profile " << profile_id << " at " << start << ":" << size;
    return gi;
  }
  nvmlComputeInstance_t whole_ci(nvmlGpuInstance_t gi, unsigned ci_profile) {
    nvmlComputeInstance_t ci = nullptr;
    EXPECT_EQ(api().gpu_instance_create_compute_instance(gi, ci_profile, &ci), NVML_SUCCESS);
    return ci;
  }
  // gpunode resolves the versioned call only; the unversioned one must answer alike.
  decltype(&::nvmlDeviceGetGpuInstanceProfileInfo) unversioned_profile_info() {
    auto fn = reinterpret_cast<decltype(&::nvmlDeviceGetGpuInstanceProfileInfo)>(
        dlsym(api().handle, "nvmlDeviceGetGpuInstanceProfileInfo"));
    EXPECT_NE(fn, nullptr);
    return fn;
  }
  unsigned gi_id(nvmlGpuInstance_t gi) {
    nvmlGpuInstanceInfo_t info{};
    EXPECT_EQ(api().gpu_instance_get_info(gi, &info), NVML_SUCCESS);
    return info.id;
  }
};

struct Row {
  unsigned index;
  unsigned id;
  const char* name;
  unsigned slices;
  unsigned instances;
  unsigned sms;
  std::vector<unsigned> starts;
  unsigned size;
};

// The tables of NVIDIA's MIG user guide ("Supported MIG Profiles"), as -lgip / -lgipp list them.
const std::vector<std::pair<Gpu, std::vector<Row>>>& Tables() {
  static const auto* tables = new std::vector<std::pair<Gpu, std::vector<Row>>>{
      {kA100_40,
       {{0, 19, "MIG 1g.5gb", 1, 7, 14, {0, 1, 2, 3, 4, 5, 6}, 1},
        {1, 14, "MIG 2g.10gb", 2, 3, 28, {0, 2, 4}, 2},
        {2, 9, "MIG 3g.20gb", 3, 2, 42, {0, 4}, 4},
        {3, 5, "MIG 4g.20gb", 4, 1, 56, {0}, 4},
        {4, 0, "MIG 7g.40gb", 7, 1, 98, {0}, 8},
        {7, 20, "MIG 1g.5gb+me", 1, 1, 14, {0, 1, 2, 3, 4, 5, 6}, 1},
        {8, 15, "MIG 1g.10gb", 1, 4, 14, {0, 2, 4, 6}, 2}}},
      {kA100_80,
       {{0, 19, "MIG 1g.10gb", 1, 7, 14, {0, 1, 2, 3, 4, 5, 6}, 1},
        {1, 14, "MIG 2g.20gb", 2, 3, 28, {0, 2, 4}, 2},
        {2, 9, "MIG 3g.40gb", 3, 2, 42, {0, 4}, 4},
        {3, 5, "MIG 4g.40gb", 4, 1, 56, {0}, 4},
        {4, 0, "MIG 7g.80gb", 7, 1, 98, {0}, 8},
        {7, 20, "MIG 1g.10gb+me", 1, 1, 14, {0, 1, 2, 3, 4, 5, 6}, 1},
        {8, 15, "MIG 1g.20gb", 1, 4, 14, {0, 2, 4, 6}, 2}}},
      {kA30,
       {{0, 14, "MIG 1g.6gb", 1, 4, 14, {0, 1, 2, 3}, 1},
        {1, 5, "MIG 2g.12gb", 2, 2, 28, {0, 2}, 2},
        {3, 0, "MIG 4g.24gb", 4, 1, 56, {0}, 4},
        {7, 21, "MIG 1g.6gb+me", 1, 1, 14, {0, 1, 2, 3}, 1},
        {9, 6, "MIG 2g.12gb+me", 2, 1, 28, {0, 2}, 2}}},
      {kH100_80,
       {{0, 19, "MIG 1g.10gb", 1, 7, 16, {0, 1, 2, 3, 4, 5, 6}, 1},
        {1, 14, "MIG 2g.20gb", 2, 3, 32, {0, 2, 4}, 2},
        {2, 9, "MIG 3g.40gb", 3, 2, 60, {0, 4}, 4},
        {3, 5, "MIG 4g.40gb", 4, 1, 64, {0}, 4},
        {4, 0, "MIG 7g.80gb", 7, 1, 132, {0}, 8},
        {7, 20, "MIG 1g.10gb+me", 1, 1, 16, {0, 1, 2, 3, 4, 5, 6}, 1},
        {8, 15, "MIG 1g.20gb", 1, 4, 26, {0, 2, 4, 6}, 2}}},
      {kH100_94,
       {{0, 19, "MIG 1g.12gb", 1, 7, 16, {0, 1, 2, 3, 4, 5, 6}, 1},
        {1, 14, "MIG 2g.24gb", 2, 3, 32, {0, 2, 4}, 2},
        {2, 9, "MIG 3g.47gb", 3, 2, 60, {0, 4}, 4},
        {3, 5, "MIG 4g.47gb", 4, 1, 64, {0}, 4},
        {4, 0, "MIG 7g.94gb", 7, 1, 132, {0}, 8},
        {7, 20, "MIG 1g.12gb+me", 1, 1, 16, {0, 1, 2, 3, 4, 5, 6}, 1},
        {8, 15, "MIG 1g.24gb", 1, 4, 26, {0, 2, 4, 6}, 2}}},
      {kH200,
       {{0, 19, "MIG 1g.18gb", 1, 7, 16, {0, 1, 2, 3, 4, 5, 6}, 1},
        {1, 14, "MIG 2g.35gb", 2, 3, 32, {0, 2, 4}, 2},
        {2, 9, "MIG 3g.71gb", 3, 2, 60, {0, 4}, 4},
        {3, 5, "MIG 4g.71gb", 4, 1, 64, {0}, 4},
        {4, 0, "MIG 7g.141gb", 7, 1, 132, {0}, 8},
        {7, 20, "MIG 1g.18gb+me", 1, 1, 16, {0, 1, 2, 3, 4, 5, 6}, 1},
        {8, 15, "MIG 1g.35gb", 1, 4, 26, {0, 2, 4, 6}, 2}}},
  };
  return *tables;
}

TEST_F(MigSimTest, ProfilesAreListedOnlyWhileMigIsOn) {
  start(kCapable);
  profile(gpu(kA100_80), NVML_GPU_INSTANCE_PROFILE_1_SLICE, NVML_ERROR_NOT_SUPPORTED);
  enable(gpu(kA100_80));
  EXPECT_EQ(profile(gpu(kA100_80), NVML_GPU_INSTANCE_PROFILE_1_SLICE).id, 19u);
}

TEST_F(MigSimTest, EveryProductHasTheUserGuidesTable) {
  start(kCapable);
  for (const auto& [index, rows] : Tables()) {
    SCOPED_TRACE("GPU " + std::to_string(index) + " " + name_of(gpu(index)));
    enable(gpu(index));
    unsigned listed = 0;
    for (unsigned i = 0; i < NVML_GPU_INSTANCE_PROFILE_COUNT; ++i) {
      nvmlGpuInstanceProfileInfo_v2_t info{};
      info.version = kNvmlGpuInstanceProfileInfoV2Version;
      if (api().device_get_gpu_instance_profile_info_v(gpu(index), i, &info) == NVML_SUCCESS)
        ++listed;
    }
    EXPECT_EQ(listed, rows.size());
    for (const Row& row : rows) {
      nvmlGpuInstanceProfileInfo_v2_t info = profile(gpu(index), row.index);
      EXPECT_EQ(info.id, row.id);
      EXPECT_STREQ(info.name, row.name);
      EXPECT_EQ(info.sliceCount, row.slices);
      EXPECT_EQ(info.instanceCount, row.instances);
      EXPECT_EQ(info.multiprocessorCount, row.sms);
      // The unversioned call answers the same.
      nvmlGpuInstanceProfileInfo_t v1{};
      ASSERT_EQ(unversioned_profile_info()(gpu(index), row.index, &v1), NVML_SUCCESS);
      EXPECT_EQ(v1.id, row.id);
      EXPECT_EQ(v1.memorySizeMB, info.memorySizeMB);
      unsigned count = 0;
      ASSERT_EQ(
          api().device_get_gpu_instance_possible_placements(gpu(index), row.id, nullptr, &count),
          NVML_SUCCESS);
      std::vector<nvmlGpuInstancePlacement_t> placements(count);
      ASSERT_EQ(api().device_get_gpu_instance_possible_placements(gpu(index), row.id,
                                                                  placements.data(), &count),
                NVML_SUCCESS);
      std::vector<unsigned> starts;
      for (const auto& p : placements) {
        starts.push_back(p.start);
        EXPECT_EQ(p.size, row.size) << row.name;
      }
      EXPECT_EQ(starts, row.starts) << row.name;
      unsigned capacity = 0;
      ASSERT_EQ(api().device_get_gpu_instance_remaining_capacity(gpu(index), row.id, &capacity),
                NVML_SUCCESS);
      EXPECT_EQ(capacity, row.instances) << row.name;
    }
  }
}

TEST_F(MigSimTest, PlacementsOverlapAndIdsFollowTheDriver) {
  start(kCapable);
  nvmlDevice_t a100 = gpu(kA100_80);
  enable(a100);
  nvmlGpuInstance_t four = create(a100, 5, 0, 4);
  nvmlGpuInstance_t three = create(a100, 9, 4, 4);
  EXPECT_EQ(gi_id(four), 1u);
  EXPECT_EQ(gi_id(three), 2u);
  create(a100, 19, 6, 1, NVML_ERROR_INSUFFICIENT_RESOURCES);  // inside the 3g.40gb
  create(a100, 9, 2, 4, NVML_ERROR_INVALID_ARGUMENT);         // not a 3g.40gb placement
  unsigned capacity = 9;
  ASSERT_EQ(api().device_get_gpu_instance_remaining_capacity(a100, 19, &capacity), NVML_SUCCESS);
  EXPECT_EQ(capacity, 0u);
  // Until a compute instance exists the GPU instance is no MIG device.
  nvmlDevice_t mig = nullptr;
  EXPECT_NE(api().device_get_mig_device_handle_by_index(a100, 0, &mig), NVML_SUCCESS);
  whole_ci(four, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE);
  ASSERT_EQ(api().device_get_mig_device_handle_by_index(a100, 0, &mig), NVML_SUCCESS);
  EXPECT_EQ(name_of(mig), "NVIDIA A100-SXM4-80GB MIG 4g.40gb");
  EXPECT_EQ(mig_profile_name(mig, a100), "4g.40gb");
  nvmlDeviceAttributes_t attributes{};
  ASSERT_EQ(api().device_get_attributes(mig, &attributes), NVML_SUCCESS);
  EXPECT_EQ(attributes.multiprocessorCount, 56u);
  EXPECT_EQ(attributes.gpuInstanceSliceCount, 4u);
  // Two 1-slice compute instances in the 3g.40gb: MIG devices 1c.3g.40gb.
  nvmlComputeInstance_t a = whole_ci(three, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
  whole_ci(three, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
  nvmlComputeInstanceInfo_t ci_info{};
  ASSERT_EQ(api().compute_instance_get_info(a, &ci_info), NVML_SUCCESS);
  EXPECT_EQ(ci_info.id, 0u);
  EXPECT_EQ(ci_info.placement.size, 1u);
  ASSERT_EQ(api().device_get_mig_device_handle_by_index(a100, 2, &mig), NVML_SUCCESS);
  EXPECT_EQ(mig_profile_name(mig, a100), "1c.3g.40gb");
  unsigned count = 4;
  nvmlComputeInstance_t cis[4];
  ASSERT_EQ(api().gpu_instance_get_compute_instances(three, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                                                     cis, &count),
            NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
}

TEST_F(MigSimTest, DestroyingWhatIsInUseIsRefused) {
  start(kCapable);
  nvmlDevice_t h100 = gpu(kH100_80);
  enable(h100);
  nvmlGpuInstance_t gi = create(h100, 0, 0, 8);
  nvmlComputeInstance_t ci = whole_ci(gi, NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE);
  EXPECT_EQ(api().gpu_instance_destroy(gi), NVML_ERROR_IN_USE);  // a compute instance is in it
  nvmlReturn_t activation = NVML_SUCCESS;
  EXPECT_EQ(api().device_set_mig_mode(h100, NVML_DEVICE_MIG_DISABLE, &activation),
            NVML_ERROR_IN_USE);
  ASSERT_EQ(api().compute_instance_destroy(ci), NVML_SUCCESS);
  EXPECT_EQ(api().compute_instance_destroy(ci), NVML_ERROR_INVALID_ARGUMENT);  // stale handle
  ASSERT_EQ(api().gpu_instance_destroy(gi), NVML_SUCCESS);
  EXPECT_EQ(api().gpu_instance_destroy(gi), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(api().device_set_mig_mode(h100, NVML_DEVICE_MIG_DISABLE, &activation), NVML_SUCCESS);
  unsigned current = 1, pending = 1;
  ASSERT_EQ(api().device_get_mig_mode(h100, &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, 0u);
  EXPECT_EQ(pending, 0u);
}

TEST_F(MigSimTest, AModeChangeOnABusyGpuStaysPending) {
  start("h200-1");  // one process holds 20 GiB
  nvmlReturn_t activation = NVML_SUCCESS;
  ASSERT_EQ(api().device_set_mig_mode(gpu(0), NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_ERROR_IN_USE);
  unsigned current = 1, pending = 0;
  ASSERT_EQ(api().device_get_mig_mode(gpu(0), &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, 0u);
  EXPECT_EQ(pending, 1u);
  profile(gpu(0), NVML_GPU_INSTANCE_PROFILE_1_SLICE, NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(MigSimTest, AGpuWithoutATableCannotBePartitioned) {
  start("dgx1-v100");
  nvmlReturn_t activation = NVML_SUCCESS;
  EXPECT_EQ(api().device_set_mig_mode(gpu(0), NVML_DEVICE_MIG_ENABLE, &activation),
            NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(MigSimTest, TheStateFileCarriesTheLayoutToTheNextProcess) {
  std::string dir = ::testing::TempDir() + "/mig-state-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::string state = dir + "/state";
  std::filesystem::remove(state);
  setenv("GPUNODE_SIM_STATE", state.c_str(), 1);
  start(kCapable);
  enable(gpu(kA30));
  nvmlGpuInstance_t gi = create(gpu(kA30), 5, 2, 2);  // 2g.12gb at 2:2
  whole_ci(gi, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE);
  std::string uuid = uuid_of(gpu(kA30));
  ASSERT_EQ(api().shutdown(), NVML_SUCCESS);
  // Only the renamed file is left, no temporary beside it.
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u);
  std::ifstream in(state);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("gpu " + uuid + " 1 1\ngi 2 5 2\nci 0 1 0\n"), std::string::npos)
      << text.str();
  // A new configuration (what the next process does) starts from the file.
  start(kCapable);
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(api().device_get_mig_device_handle_by_index(gpu(kA30), 0, &mig), NVML_SUCCESS);
  EXPECT_EQ(mig_profile_name(mig, gpu(kA30)), "2g.12gb");
  unsigned id = 0;
  ASSERT_EQ(api().device_get_gpu_instance_id(mig, &id), NVML_SUCCESS);
  EXPECT_EQ(id, 2u);
  ASSERT_EQ(api().shutdown(), NVML_SUCCESS);
  // A damaged file is one clear configuration error.
  std::ofstream(state) << "gpunode-sim-mig-state 1\nbogus\n";
  std::string error = configure(kCapable);
  EXPECT_NE(error.find(state + ":2: unknown record \"bogus\""), std::string::npos) << error;
  std::filesystem::remove_all(dir);
}

TEST_F(MigSimTest, AnInjectedFailureChangesNothing) {
  setenv("GPUNODE_SIM_MIG_FAIL_AT", "2", 1);
  start(kCapable);
  enable(gpu(kA100_40));  // change 1
  nvmlGpuInstancePlacement_t placement{0, 8};
  nvmlGpuInstance_t gi = nullptr;
  EXPECT_EQ(api().device_create_gpu_instance_with_placement(gpu(kA100_40), 0, &placement, &gi),
            NVML_ERROR_UNKNOWN);  // change 2
  unsigned count = 1;
  nvmlGpuInstance_t list[1];
  ASSERT_EQ(api().device_get_gpu_instances(gpu(kA100_40), 0, list, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  create(gpu(kA100_40), 0, 0, 8);  // change 3 works
}

}  // namespace
}  // namespace gpunode::sim::testing
