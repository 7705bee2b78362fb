// Behaviour over time, scripted in a profile's timeline and observed through the ABI. Tests never
// sleep: they wait for the timeline through nvmlEventSetWait_v2, which blocks until an event.
#include <chrono>
#include <cstdlib>
#include <thread>

#include "sim_library.h"

namespace gpunode::sim::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

const std::string kNode = R"(name: timeline-node
driver_version: "550.54.15"
cuda_driver_version: "12.4"
gpu_defaults:
  name: NVIDIA H100 80GB HBM3
  memory_mib: 81559
  memory_used_mib: 1
  temperature_c: 30
  power_draw_w: 70
  energy_j: 1000
  utilization: {gpu: 0, memory: 0, encoder: 0, decoder: 0}
  clocks: {graphics: 1980, sm: 1980, memory: 2619, video: 1545}
  ecc: {mode: enabled}
  pstate: P0
gpus:
  - {bus_id: 0000:1B:00.0}
  - {bus_id: 0000:43:00.0}
timeline:
)";

class TimelineTest : public SimTest {
 protected:
  void TearDown() override {
    SimTest::TearDown();
    ::unsetenv("GPUNODE_SIM_CLOCK_SCALE");
  }
  // Starts the node with `events` as its timeline; returns when nvmlInit was called.
  Clock::time_point start_with(const std::string& events) {
    return start_with_node(kNode + events);
  }
  Clock::time_point start_with_node(const std::string& profile) {
    std::string path = write_file("node.yaml", profile);
    EXPECT_EQ(configure(path), "");
    Clock::time_point init = Clock::now();
    EXPECT_EQ(api().init(), NVML_SUCCESS);
    return init;
  }
  nvmlEventSet_t listen(std::initializer_list<unsigned> gpus,
                        unsigned long long types = nvmlEventTypeXidCriticalError) {
    nvmlEventSet_t set = nullptr;
    EXPECT_EQ(api().event_set_create(&set), NVML_SUCCESS);
    for (unsigned g : gpus)
      EXPECT_EQ(api().device_register_events(gpu(g), types, set), NVML_SUCCESS);
    return set;
  }
  nvmlEventData_t next(nvmlEventSet_t set, unsigned timeout_ms = 5000) {
    nvmlEventData_t data{};
    nvmlReturn_t result = api().event_set_wait(set, &data, timeout_ms);
    EXPECT_EQ(result, NVML_SUCCESS) << api().error_string(result);
    return data;
  }
};

TEST_F(TimelineTest, XidArrivesOnTime) {
  Clock::time_point init = start_with("  - {at: 300ms, gpu: 1, event: xid, xid: 48}\n");
  nvmlEventSet_t set = listen({0, 1});
  nvmlEventData_t data = next(set);
  auto elapsed = Clock::now() - init;
  EXPECT_GE(elapsed, milliseconds(300));
  EXPECT_LT(elapsed, milliseconds(400));
  EXPECT_EQ(data.device, gpu(1));
  EXPECT_EQ(data.eventType, nvmlEventTypeXidCriticalError);
  EXPECT_EQ(data.eventData, 48u);
  EXPECT_EQ(data.gpuInstanceId, kNvmlNoInstanceId);
  EXPECT_EQ(data.computeInstanceId, kNvmlNoInstanceId);
  EXPECT_EQ(api().event_set_wait(set, &data, 50), NVML_ERROR_TIMEOUT);
}

TEST_F(TimelineTest, ShortWaitTimesOutBeforeTheEvent) {
  start_with("  - {at: 400ms, gpu: 0, event: xid, xid: 31}\n");
  nvmlEventSet_t set = listen({0});
  nvmlEventData_t data{};
  EXPECT_EQ(api().event_set_wait(set, &data, 100), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(next(set).eventData, 31u);
}

TEST_F(TimelineTest, EventsDueBeforeTheWaitAreQueuedInOrder) {
  start_with(
      "  - {at: 100ms, gpu: 1, event: xid, xid: 43}\n"
      "  - {at: 150ms, gpu: 1, event: xid, xid: 31}\n"
      "  - {at: 200ms, gpu: 0, event: xid, xid: 13}\n");
  nvmlEventSet_t gpu0 = listen({0});
  nvmlEventSet_t gpu1 = listen({1});
  EXPECT_EQ(next(gpu0).eventData, 13u);  // by now both GPU1 events are due
  EXPECT_EQ(next(gpu1, 0).eventData, 43u);
  EXPECT_EQ(next(gpu1, 0).eventData, 31u);
}

TEST_F(TimelineTest, ClockScaleSpeedsTheTimelineUp) {
  ::setenv("GPUNODE_SIM_CLOCK_SCALE", "20", 1);
  Clock::time_point init = start_with("  - {at: 4s, gpu: 0, event: xid, xid: 94}\n");
  nvmlEventSet_t set = listen({0});
  EXPECT_EQ(next(set).eventData, 94u);
  auto elapsed = Clock::now() - init;
  EXPECT_GE(elapsed, milliseconds(200));
  EXPECT_LT(elapsed, milliseconds(300));
}

TEST_F(TimelineTest, GpuFallsOffTheBusAndRecovers) {
  start_with(
      "  - {at: 200ms, gpu: 1, event: fall_off_bus}\n"
      "  - {at: 400ms, gpu: 0, event: xid, xid: 13}\n"
      "  - {at: 500ms, gpu: 1, event: recover}\n"
      "  - {at: 600ms, gpu: 0, event: xid, xid: 31}\n");
  nvmlEventSet_t both = listen({0, 1});
  nvmlEventSet_t gpu0 = listen({0});
  // The driver's Xid 79 comes first, then every wait that watches the GPU reports the loss.
  nvmlEventData_t data = next(both);
  EXPECT_EQ(data.device, gpu(1));
  EXPECT_EQ(data.eventData, 79u);
  EXPECT_EQ(api().event_set_wait(both, &data, 1000), NVML_ERROR_GPU_IS_LOST);
  unsigned temperature = 0;
  char name[64];
  nvmlMemory_t memory{};
  EXPECT_EQ(api().device_get_temperature(gpu(1), NVML_TEMPERATURE_GPU, &temperature),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api().device_get_name(gpu(1), name, sizeof name), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api().device_get_memory_info(gpu(1), &memory), NVML_ERROR_GPU_IS_LOST);
  nvmlGpuTopologyLevel_t level{};
  EXPECT_EQ(api().device_get_topology_common_ancestor(gpu(0), gpu(1), &level),
            NVML_ERROR_GPU_IS_LOST);
  // The other GPU still answers; the lost one keeps its handle and index.
  EXPECT_EQ(api().device_get_temperature(gpu(0), NVML_TEMPERATURE_GPU, &temperature), NVML_SUCCESS);
  unsigned index = 0;
  EXPECT_EQ(api().device_get_index(gpu(1), &index), NVML_SUCCESS);
  EXPECT_EQ(index, 1u);
  // GPU0's own events are unaffected, and after the recovery GPU1 answers again.
  EXPECT_EQ(next(gpu0).eventData, 13u);
  EXPECT_EQ(next(gpu0).eventData, 31u);
  EXPECT_EQ(api().device_get_temperature(gpu(1), NVML_TEMPERATURE_GPU, &temperature), NVML_SUCCESS);
  // The set watching both GPUs kept GPU0's events, and no longer reports a loss.
  EXPECT_EQ(next(both, 0).eventData, 13u);
  EXPECT_EQ(next(both, 0).eventData, 31u);
  EXPECT_EQ(api().event_set_wait(both, &data, 0), NVML_ERROR_TIMEOUT);
}

TEST_F(TimelineTest, ProcessesAppearAndMemoryFollows) {
  start_with(
      "  - {at: 100ms, gpu: 0, event: process_start, pid: 4242, used_memory_mib: 2048}\n"
      "  - {at: 150ms, gpu: 1, event: xid, xid: 1}\n"
      "  - {at: 250ms, gpu: 0, event: process_exit, pid: 4242}\n"
      "  - {at: 300ms, gpu: 1, event: xid, xid: 2}\n");
  nvmlEventSet_t marker = listen({1});
  unsigned count = 0;
  EXPECT_EQ(api().device_get_compute_running_processes(gpu(0), &count, nullptr), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(next(marker).eventData, 1u);
  nvmlProcessInfo_t info{};
  count = 1;
  ASSERT_EQ(api().device_get_compute_running_processes(gpu(0), &count, &info), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(info.pid, 4242u);
  EXPECT_EQ(info.usedGpuMemory, 2048ULL << 20);
  nvmlMemory_v2_t memory{};
  memory.version = kNvmlMemoryV2Version;
  ASSERT_EQ(api().device_get_memory_info_v2(gpu(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, (1ULL + 2048) << 20);
  EXPECT_EQ(next(marker).eventData, 2u);
  count = 0;
  EXPECT_EQ(api().device_get_compute_running_processes(gpu(0), &count, nullptr), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  ASSERT_EQ(api().device_get_memory_info_v2(gpu(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, 1ULL << 20);
}

TEST_F(TimelineTest, MetricsStepAndRamp) {
  start_with(
      "  - {at: 100ms, gpu: 0, event: set, utilization: {gpu: 90, memory: 55}, temperature_c: 71, "
      "pstate: P2}\n"
      "  - {at: 150ms, gpu: 0, event: set, power_draw_w: 700, over: 1h}\n"
      "  - {at: 200ms, gpu: 1, event: xid, xid: 1}\n");
  nvmlEventSet_t pstate = listen({0}, nvmlEventTypePState);
  nvmlEventSet_t marker = listen({1});
  nvmlEventData_t data = next(pstate);
  EXPECT_EQ(data.eventType, nvmlEventTypePState);
  EXPECT_EQ(data.device, gpu(0));
  nvmlUtilization_t utilization{};
  ASSERT_EQ(api().device_get_utilization_rates(gpu(0), &utilization), NVML_SUCCESS);
  EXPECT_EQ(utilization.gpu, 90u);
  EXPECT_EQ(utilization.memory, 55u);
  unsigned temperature = 0;
  ASSERT_EQ(api().device_get_temperature(gpu(0), NVML_TEMPERATURE_GPU, &temperature), NVML_SUCCESS);
  EXPECT_EQ(temperature, 71u);
  nvmlPstates_t state{};
  ASSERT_EQ(api().device_get_performance_state(gpu(0), &state), NVML_SUCCESS);
  EXPECT_EQ(state, 2);
  EXPECT_EQ(next(marker).eventData, 1u);
  // An hour-long ramp from 70 W has barely started: the draw is a little above 70 W.
  unsigned power = 0;
  ASSERT_EQ(api().device_get_power_usage(gpu(0), &power), NVML_SUCCESS);
  EXPECT_GT(power, 70000u);
  EXPECT_LT(power, 72000u);
  unsigned long long before = 0, after = 0;
  ASSERT_EQ(api().device_get_total_energy_consumption(gpu(0), &before), NVML_SUCCESS);
  EXPECT_GE(before, 1000000u + 14000u);  // 1000 J at time zero, then 70 W or more for 0.2 s
  nvmlEventData_t none{};
  EXPECT_EQ(api().event_set_wait(marker, &none, 100), NVML_ERROR_TIMEOUT);
  ASSERT_EQ(api().device_get_total_energy_consumption(gpu(0), &after), NVML_SUCCESS);
  EXPECT_GE(after - before, 7000u);  // 100 ms at 70 W or more is 7 J
}

TEST_F(TimelineTest, EccErrorsCountAndNotify) {
  start_with(
      "  - {at: 100ms, gpu: 0, event: ecc, corrected: 2}\n"
      "  - {at: 150ms, gpu: 0, event: ecc, uncorrected: 1}\n");
  nvmlEventSet_t set = listen({0}, nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError);
  EXPECT_EQ(next(set).eventType, nvmlEventTypeSingleBitEccError);
  EXPECT_EQ(next(set).eventType, nvmlEventTypeDoubleBitEccError);
  unsigned long long count = 0;
  ASSERT_EQ(api().device_get_total_ecc_errors(gpu(0), NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                              NVML_VOLATILE_ECC, &count),
            NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  ASSERT_EQ(api().device_get_total_ecc_errors(gpu(0), NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                              NVML_AGGREGATE_ECC, &count),
            NVML_SUCCESS);
  EXPECT_EQ(count, 1u);
}

TEST_F(TimelineTest, RowRemapperStateChangesOnTime) {
  // GPU 1 is the marker: its XID comes after the remapper changed on GPU 0.
  std::string node = kNode;
  const std::string pstate = "  pstate: P0\n";
  node.insert(node.find(pstate) + pstate.size(),
              "  remapped_rows: {corrected: 3, uncorrected: 0, pending: false, failure: false}\n");
  start_with_node(node + R"(  - {at: 100ms, gpu: 0, event: remap, pending: true, uncorrected: 1}
  - {at: 100ms, gpu: 1, event: xid, xid: 48}
  - {at: 200ms, gpu: 0, event: remap, pending: false, failure: true}
  - {at: 200ms, gpu: 1, event: xid, xid: 48}
)");
  nvmlEventSet_t set = listen({1});
  unsigned corrected = 0, uncorrected = 0, pending = 0, failure = 0;
  auto read = [&] {
    return api().device_get_remapped_rows(gpu(0), &corrected, &uncorrected, &pending, &failure);
  };
  ASSERT_EQ(read(), NVML_SUCCESS);
  EXPECT_EQ(pending, 0u);
  next(set);
  ASSERT_EQ(read(), NVML_SUCCESS);
  EXPECT_EQ(corrected, 3u);
  EXPECT_EQ(uncorrected, 1u);
  EXPECT_EQ(pending, 1u);
  EXPECT_EQ(failure, 0u);
  next(set);
  ASSERT_EQ(read(), NVML_SUCCESS);
  EXPECT_EQ(uncorrected, 1u);
  EXPECT_EQ(pending, 0u);
  EXPECT_EQ(failure, 1u);
}

TEST_F(TimelineTest, MigXidNamesTheInstance) {
  std::string path = write_file("mig.yaml", R"(gpus:
  - name: NVIDIA A100-SXM4-80GB
    bus_id: 0000:07:00.0
    memory_mib: 81920
    mig:
      mode: enabled
      devices:
        - {profile: 1g.10gb, gpu_instance_id: 7, compute_instance_id: 0}
        - {profile: 1g.10gb, gpu_instance_id: 8, compute_instance_id: 0}
timeline:
  - {at: 100ms, gpu: 0, event: xid, xid: 43, gpu_instance_id: 8, compute_instance_id: 0}
  - {at: 150ms, gpu: 0, event: xid, xid: 48}
  - {at: 200ms, gpu: 0, event: process_start, pid: 77, used_memory_mib: 1024, gpu_instance_id: 7, compute_instance_id: 0}
  - {at: 250ms, gpu: 0, event: xid, xid: 1}
)");
  ASSERT_EQ(configure(path), "");
  ASSERT_EQ(api().init(), NVML_SUCCESS);
  nvmlEventSet_t set = listen({0});
  nvmlEventData_t data = next(set);
  EXPECT_EQ(data.eventData, 43u);
  EXPECT_EQ(data.gpuInstanceId, 8u);
  EXPECT_EQ(data.computeInstanceId, 0u);
  data = next(set);
  EXPECT_EQ(data.eventData, 48u);
  EXPECT_EQ(data.gpuInstanceId, kNvmlNoInstanceId);
  EXPECT_EQ(data.computeInstanceId, kNvmlNoInstanceId);
  EXPECT_EQ(next(set).eventData, 1u);
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(api().device_get_mig_device_handle_by_index(gpu(0), 0, &mig), NVML_SUCCESS);
  nvmlMemory_t memory{};
  ASSERT_EQ(api().device_get_memory_info(mig, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, 1024ULL << 20);
  nvmlProcessInfo_t info{};
  unsigned count = 1;
  ASSERT_EQ(api().device_get_compute_running_processes(mig, &count, &info), NVML_SUCCESS);
  EXPECT_EQ(info.pid, 77u);
  EXPECT_EQ(info.gpuInstanceId, 7u);
}

TEST_F(TimelineTest, WaitersOnSeveralThreads) {
  start_with(
      "  - {at: 100ms, gpu: 0, event: xid, xid: 10}\n"
      "  - {at: 200ms, gpu: 1, event: xid, xid: 20}\n");
  nvmlEventSet_t gpu0 = listen({0});
  nvmlEventSet_t gpu1 = listen({1});
  unsigned long long seen0 = 0, seen1 = 0;
  std::thread a([&] { seen0 = next(gpu0).eventData; });
  std::thread b([&] { seen1 = next(gpu1).eventData; });
  a.join();
  b.join();
  EXPECT_EQ(seen0, 10u);
  EXPECT_EQ(seen1, 20u);
}

}  // namespace
}  // namespace gpunode::sim::testing
