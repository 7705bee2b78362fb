// NVML semantics that do not depend on the node: init refcounting, argument checks, buffer
// sizes, error strings, handles and the exported symbol set.
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "sim_library.h"

namespace gpunode::sim::testing {
namespace {

class ApiTest : public SimTest {};

TEST_F(ApiTest, EveryEntryPointNameIsExported) {
  ASSERT_NE(api().handle, nullptr);
  for (const std::string& name : entry_point_names()) {
    EXPECT_NE(dlsym(api().handle, name.c_str()), nullptr) << name;
  }
  EXPECT_NE(api().configure, nullptr);
  EXPECT_NE(api().builtin_profiles, nullptr);
}

TEST_F(ApiTest, BuiltinProfileList) {
  EXPECT_STREQ(api().builtin_profiles(), "a10-pcie-4,a100-mig,dgx-h100,dgx1-v100,h200-1");
}

TEST_F(ApiTest, CallsBeforeInitAreUninitialized) {
  ASSERT_EQ(configure("h200-1"), "");
  unsigned count = 0;
  EXPECT_EQ(api().device_get_count(&count), NVML_ERROR_UNINITIALIZED);
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(api().device_get_handle_by_index(0, &device), NVML_ERROR_UNINITIALIZED);
  char version[80];
  EXPECT_EQ(api().system_get_driver_version(version, sizeof version), NVML_ERROR_UNINITIALIZED);
  nvmlEventSet_t set = nullptr;
  EXPECT_EQ(api().event_set_create(&set), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(api().shutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(ApiTest, InitIsReferenceCounted) {
  ASSERT_EQ(configure("h200-1"), "");
  ASSERT_EQ(api().init(), NVML_SUCCESS);
  ASSERT_EQ(api().init(), NVML_SUCCESS);  // the unversioned nvmlInit counts the same
  auto* init_v1 = reinterpret_cast<nvmlReturn_t (*)()>(dlsym(api().handle, "nvmlInit"));
  ASSERT_NE(init_v1, nullptr);
  ASSERT_EQ(init_v1(), NVML_SUCCESS);
  unsigned count = 0;
  EXPECT_EQ(api().shutdown(), NVML_SUCCESS);
  EXPECT_EQ(api().shutdown(), NVML_SUCCESS);
  EXPECT_EQ(api().device_get_count(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(api().shutdown(), NVML_SUCCESS);
  EXPECT_EQ(api().device_get_count(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(api().shutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(ApiTest, HandlesAreStableAcrossShutdownAndInit) {
  start("dgx-h100");
  nvmlDevice_t first = gpu(3);
  ASSERT_EQ(api().shutdown(), NVML_SUCCESS);
  ASSERT_EQ(api().init(), NVML_SUCCESS);
  EXPECT_EQ(gpu(3), first);
  nvmlDevice_t by_uuid = nullptr;
  EXPECT_EQ(api().device_get_handle_by_uuid(uuid_of(first).c_str(), &by_uuid), NVML_SUCCESS);
  EXPECT_EQ(by_uuid, first);
  unsigned index = 99;
  EXPECT_EQ(api().device_get_index(first, &index), NVML_SUCCESS);
  EXPECT_EQ(index, 3u);
}

TEST_F(ApiTest, ReconfiguringWhileInitializedIsRefused) {
  start("h200-1");
  char error[256] = "";
  EXPECT_EQ(api().configure("dgx-h100", nullptr, error, sizeof error), 2);
  EXPECT_NE(std::string(error).find("nvmlShutdown"), std::string::npos) << error;
  unsigned count = 0;
  EXPECT_EQ(api().device_get_count(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 1u);
}

TEST_F(ApiTest, InvalidArguments) {
  start("dgx-h100");
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(api().device_get_count(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api().device_get_handle_by_index(8, &device), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api().device_get_handle_by_index(0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api().device_get_handle_by_uuid(nullptr, &device), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api().device_get_handle_by_uuid("GPU-00000000-0000-0000-0000-000000000000", &device),
            NVML_ERROR_NOT_FOUND);
  unsigned value = 0;
  // A pointer that is not a handle, and null, are both invalid, never a crash.
  int not_a_device = 0;
  auto bogus = reinterpret_cast<nvmlDevice_t>(&not_a_device);
  EXPECT_EQ(api().device_get_temperature(bogus, NVML_TEMPERATURE_GPU, &value),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api().device_get_temperature(nullptr, NVML_TEMPERATURE_GPU, &value),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api().device_get_temperature(gpu(0), NVML_TEMPERATURE_GPU, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api().device_get_temperature(gpu(0), 7, &value), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api().device_get_clock_info(gpu(0), 9, &value), NVML_ERROR_INVALID_ARGUMENT);
  nvmlEnableState_t state{};
  EXPECT_EQ(api().device_get_nvlink_state(gpu(0), NVML_NVLINK_MAX_LINKS, &state),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api().device_get_nvlink_state(gpu(0), 18, &state), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api().device_get_total_ecc_errors(gpu(0), 5, NVML_VOLATILE_ECC, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  nvmlEventData_t data{};
  EXPECT_EQ(api().event_set_wait(nullptr, &data, 0), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api().event_set_free(nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(ApiTest, ShortBuffersAreInsufficientSize) {
  start("dgx-h100");
  char small[8];
  EXPECT_EQ(api().device_get_name(gpu(0), small, sizeof small), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(api().device_get_uuid(gpu(0), small, sizeof small), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(api().system_get_driver_version(small, sizeof small), NVML_ERROR_INSUFFICIENT_SIZE);
  char exact[sizeof "550.90.07"];
  EXPECT_EQ(api().system_get_driver_version(exact, sizeof exact), NVML_SUCCESS);
  EXPECT_STREQ(exact, "550.90.07");
  EXPECT_EQ(api().system_get_driver_version(exact, sizeof exact - 1), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(api().device_get_name(gpu(0), nullptr, 64), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(ApiTest, ProcessListProtocol) {
  start("a100-mig");
  // GPU5 runs one process; GPU6 none.
  unsigned count = 0;
  EXPECT_EQ(api().device_get_compute_running_processes(gpu(6), &count, nullptr), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(api().device_get_compute_running_processes(gpu(5), &count, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 1u);
  nvmlProcessInfo_t infos[4]{};
  count = 4;
  ASSERT_EQ(api().device_get_compute_running_processes(gpu(5), &count, infos), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(infos[0].pid, 52001u);
  EXPECT_EQ(infos[0].usedGpuMemory, 30720ULL << 20);
  EXPECT_EQ(infos[0].gpuInstanceId, kNvmlNoInstanceId);
  EXPECT_EQ(infos[0].computeInstanceId, kNvmlNoInstanceId);
  EXPECT_EQ(api().device_get_compute_running_processes(gpu(5), nullptr, infos),
            NVML_ERROR_INVALID_ARGUMENT);
  auto* v2 = reinterpret_cast<decltype(&nvmlDeviceGetComputeRunningProcesses_v2)>(
      dlsym(api().handle, "nvmlDeviceGetComputeRunningProcesses_v2"));
  ASSERT_NE(v2, nullptr);
  count = 0;
  EXPECT_EQ(v2(gpu(5), &count, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 1u);
}

TEST_F(ApiTest, ErrorStringsAreNvmls) {
  EXPECT_STREQ(api().error_string(NVML_SUCCESS), "Success");
  EXPECT_STREQ(api().error_string(NVML_ERROR_UNINITIALIZED), "Uninitialized");
  EXPECT_STREQ(api().error_string(NVML_ERROR_INVALID_ARGUMENT), "Invalid Argument");
  EXPECT_STREQ(api().error_string(NVML_ERROR_NOT_SUPPORTED), "Not Supported");
  EXPECT_STREQ(api().error_string(NVML_ERROR_NO_PERMISSION), "Insufficient Permissions");
  EXPECT_STREQ(api().error_string(NVML_ERROR_INSUFFICIENT_SIZE), "Insufficient Size");
  EXPECT_STREQ(api().error_string(NVML_ERROR_TIMEOUT), "Timeout");
  EXPECT_STREQ(api().error_string(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
  EXPECT_STREQ(api().error_string(NVML_ERROR_UNKNOWN), "Unknown Error");
  EXPECT_STREQ(api().error_string(12345), "Unknown Error");
}

TEST_F(ApiTest, SystemQueries) {
  start("dgx-h100");
  int cuda = 0;
  EXPECT_EQ(api().system_get_cuda_driver_version(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, 12040);
  auto* cuda_v1 = reinterpret_cast<decltype(&nvmlSystemGetCudaDriverVersion)>(
      dlsym(api().handle, "nvmlSystemGetCudaDriverVersion"));
  cuda = 0;
  EXPECT_EQ(cuda_v1(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, 12040);
  char version[80];
  EXPECT_EQ(api().system_get_nvml_version(version, sizeof version), NVML_SUCCESS);
  EXPECT_STREQ(version, "12.550.90.07");
  EXPECT_EQ(api().system_get_cuda_driver_version(nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(ApiTest, MemoryInfoV2ChecksTheVersion) {
  start("h200-1");
  nvmlMemory_v2_t memory{};
  memory.version = 1;
  EXPECT_EQ(api().device_get_memory_info_v2(gpu(0), &memory), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  memory.version = kNvmlMemoryV2Version;
  ASSERT_EQ(api().device_get_memory_info_v2(gpu(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 143771ULL << 20);
  EXPECT_EQ(memory.reserved, 555ULL << 20);
  EXPECT_EQ(memory.used, 20481ULL << 20);  // a 20 GiB process and 1 MiB of context
  EXPECT_EQ(memory.free, (143771ULL - 555 - 20481) << 20);
  nvmlMemory_t v1{};
  ASSERT_EQ(api().device_get_memory_info(gpu(0), &v1), NVML_SUCCESS);
  EXPECT_EQ(v1.total, 143771ULL << 20);
  EXPECT_EQ(v1.used, (555ULL + 20481) << 20);  // v1 `used` includes reserved
  EXPECT_EQ(v1.free, memory.free);
}

TEST_F(ApiTest, EventWaitTimesOut) {
  start("h200-1");
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(api().event_set_create(&set), NVML_SUCCESS);
  ASSERT_EQ(api().device_register_events(gpu(0), nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
  nvmlEventData_t data{};
  auto begin = std::chrono::steady_clock::now();
  EXPECT_EQ(api().event_set_wait(set, &data, 150), NVML_ERROR_TIMEOUT);
  auto waited = std::chrono::steady_clock::now() - begin;
  EXPECT_GE(waited, std::chrono::milliseconds(150));
  EXPECT_LT(waited, std::chrono::milliseconds(1500));
  EXPECT_EQ(api().event_set_wait(set, &data, 0), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(api().event_set_free(set), NVML_SUCCESS);
  EXPECT_EQ(api().event_set_free(set), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(ApiTest, RegisteringUnsupportedEventTypesFails) {
  start("dgx-h100");
  unsigned long long supported = 0;
  ASSERT_EQ(api().device_get_supported_event_types(gpu(0), &supported), NVML_SUCCESS);
  EXPECT_EQ(supported, nvmlEventTypeXidCriticalError | nvmlEventTypePState | nvmlEventTypeClock |
                           nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(api().event_set_create(&set), NVML_SUCCESS);
  EXPECT_EQ(api().device_register_events(gpu(0), 0x4000, set), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api().device_register_events(gpu(0), supported, set), NVML_SUCCESS);
  EXPECT_EQ(api().event_set_free(set), NVML_SUCCESS);
}

TEST_F(ApiTest, ShutdownWakesAWaiter) {
  start("h200-1");
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(api().event_set_create(&set), NVML_SUCCESS);
  ASSERT_EQ(api().device_register_events(gpu(0), nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
  nvmlReturn_t result = NVML_SUCCESS;
  std::thread waiter([&] {
    nvmlEventData_t data{};
    result = api().event_set_wait(set, &data, 10000);
  });
  // Shutdown is not ordered with the waiter's start: either it waits and is woken, or it finds
  // NVML shut down. Both must end well before the 10 s timeout.
  auto begin = std::chrono::steady_clock::now();
  ASSERT_EQ(api().shutdown(), NVML_SUCCESS);
  waiter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
  EXPECT_TRUE(result == NVML_ERROR_UNINITIALIZED || result == NVML_ERROR_INVALID_ARGUMENT)
      << api().error_string(result);
}

// The automatic configuration happens only in a process that never called gpunodeSimConfigure,
// so these run their checks in a fresh process: a death test re-executes the test binary.
TEST_F(ApiTest, DefaultsToDgxH100FromTheEnvironment) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::unsetenv("GPUNODE_SIM");
        ::unsetenv("GPUNODE_SIM_TOPOLOGY");
        unsigned count = 0;
        char name[NVML_DEVICE_NAME_BUFFER_SIZE] = "";
        nvmlDevice_t device = nullptr;
        bool ok = api().init() == NVML_SUCCESS && api().device_get_count(&count) == NVML_SUCCESS &&
                  count == 8 && api().device_get_handle_by_index(0, &device) == NVML_SUCCESS &&
                  api().device_get_name(device, name, sizeof name) == NVML_SUCCESS &&
                  std::string(name) == "NVIDIA H100 80GB HBM3";
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(ApiTest, BadEnvironmentSpecFailsInitWithTheReason) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("GPUNODE_SIM", "dgx-h10", 1);
        nvmlReturn_t result = api().init();
        std::string message = api().error_string(result);
        bool ok =
            result != NVML_SUCCESS &&
            message.find(
                "unknown built-in profile \"dgx-h10\"; known: a10-pcie-4, a100-mig, dgx-h100, "
                "dgx1-v100, h200-1") != std::string::npos &&
            message.find('\n') == std::string::npos;
        // A later nvmlInit tries again and succeeds once the environment is fixed.
        ::unsetenv("GPUNODE_SIM");
        ok = ok && api().init() == NVML_SUCCESS &&
             std::string(api().error_string(result)) == "Driver Not Loaded";
        if (!ok) std::fprintf(stderr, "message: %s\n", message.c_str());
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// gpunode does not call these, but NVIDIA's device plugin and GFD (go-nvlib) reach every MIG
// device's instances through them.
TEST_F(ApiTest, InstancesAreFoundByTheirIds) {
  auto gpu_instance_by_id = reinterpret_cast<decltype(&::nvmlDeviceGetGpuInstanceById)>(
      dlsym(api().handle, "nvmlDeviceGetGpuInstanceById"));
  auto compute_instance_by_id =
      reinterpret_cast<decltype(&::nvmlGpuInstanceGetComputeInstanceById)>(
          dlsym(api().handle, "nvmlGpuInstanceGetComputeInstanceById"));
  ASSERT_NE(gpu_instance_by_id, nullptr);
  ASSERT_NE(compute_instance_by_id, nullptr);
  start("a100-mig");
  // GPU 1 holds 3g.40gb, 2g.20gb and 1g.10gb: look up the second MIG device's instances.
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(api().device_get_mig_device_handle_by_index(gpu(1), 1, &mig), NVML_SUCCESS);
  unsigned gpu_instance_id = 0, compute_instance_id = 0;
  ASSERT_EQ(api().device_get_gpu_instance_id(mig, &gpu_instance_id), NVML_SUCCESS);
  ASSERT_EQ(api().device_get_compute_instance_id(mig, &compute_instance_id), NVML_SUCCESS);

  nvmlGpuInstance_t gpu_instance = nullptr;
  ASSERT_EQ(gpu_instance_by_id(gpu(1), gpu_instance_id, &gpu_instance), NVML_SUCCESS);
  nvmlGpuInstanceInfo_t gpu_instance_info{};
  ASSERT_EQ(api().gpu_instance_get_info(gpu_instance, &gpu_instance_info), NVML_SUCCESS);
  EXPECT_EQ(gpu_instance_info.id, gpu_instance_id);
  EXPECT_EQ(gpu_instance_info.device, gpu(1));
  nvmlComputeInstance_t compute_instance = nullptr;
  ASSERT_EQ(compute_instance_by_id(gpu_instance, compute_instance_id, &compute_instance),
            NVML_SUCCESS);
  nvmlComputeInstanceInfo_t compute_instance_info{};
  ASSERT_EQ(api().compute_instance_get_info(compute_instance, &compute_instance_info),
            NVML_SUCCESS);
  EXPECT_EQ(compute_instance_info.id, compute_instance_id);
  EXPECT_EQ(compute_instance_info.gpuInstance, gpu_instance);

  // nvml.h's answers: an id with no instance, MIG off (GPU 5), a missing output, a MIG handle.
  EXPECT_EQ(gpu_instance_by_id(gpu(1), 99, &gpu_instance), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(compute_instance_by_id(gpu_instance, 99, &compute_instance), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(gpu_instance_by_id(gpu(5), 0, &gpu_instance), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(gpu_instance_by_id(gpu(1), gpu_instance_id, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(compute_instance_by_id(gpu_instance, compute_instance_id, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gpu_instance_by_id(mig, gpu_instance_id, &gpu_instance), NVML_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace gpunode::sim::testing
