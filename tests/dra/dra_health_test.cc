// How the health monitor's verdicts reach the DRA plugin's health stream and the ResourceSlice's
// device taints: the mapping from a board's state (an XID, a lost GPU, an unmonitored GPU, a MIG
// device's own XID), and the whole path on the simulator: an XID or a fall off the bus taints the
// device, and the evidence of recovery lifts the taint.
#include <chrono>

#include "build_paths.h"
#include "core/host_root.h"
#include "dra/device_health.h"
#include "gmock/gmock.h"
#include "gpu/dra_devices.h"
#include "gtest/gtest.h"
#include "health/health_monitor.h"
#include "sim_library.h"

namespace gpunode::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

gpu::DraDevice Gpu(unsigned index) {
  gpu::DraDevice device;
  device.name = "gpu-" + std::to_string(index);
  device.gpu_index = device.gpu_minor = index;
  device.gpu_uuid = "GPU-" + std::to_string(index);
  return device;
}

gpu::DraDevice Mig(unsigned gpu, unsigned gi, unsigned ci) {
  gpu::DraDevice device = Gpu(gpu);
  device.name += "-mig-" + std::to_string(gi) + "-" + std::to_string(ci);
  device.gi = gi;
  device.ci = ci;
  return device;
}

TEST(DraHealth, TheMonitorWatchesEachGpuOnceWithTheMigDevicesAnnouncedOfIt) {
  std::vector<health::MonitoredGpu> gpus =
      MonitoredGpus({Gpu(0), Mig(2, 1, 0), Mig(2, 5, 0), Gpu(3)});
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0].index, 0u);
  EXPECT_THAT(gpus[0].migs, IsEmpty());
  EXPECT_EQ(gpus[1].index, 2u);
  EXPECT_EQ(gpus[1].uuid, "GPU-2");
  EXPECT_THAT(gpus[1].migs, ElementsAre(health::MonitoredMig{1, 0}, health::MonitoredMig{5, 0}));
  EXPECT_EQ(gpus[2].index, 3u);
}

TEST(DraHealth, EachFaultGivesNvidiasTaintAndTheStreamsMessage) {
  // Board positions: GPU 0 -> 0, GPU 2 (two MIG devices) -> 1, GPU 3 -> 2, GPU 4 -> 3.
  std::vector<gpu::DraDevice> devices = {Gpu(0), Mig(2, 1, 0), Mig(2, 5, 0),
                                         Gpu(3), Gpu(4),       Gpu(5)};
  health::HealthBoard board;
  board.SetGpu(0, false,
               {.reason = "XID 62 (Internal micro-controller halt)",
                .kind = health::FaultClass::kResponds,
                .xid = 62});
  board.SetMig({1, 5, 0}, false,
               {.reason = "XID 48 (DBE)", .kind = health::FaultClass::kMemory, .xid = 48});
  board.SetGpu(2, false,
               {.reason = "the GPU is lost (GPU is lost)",
                .kind = health::FaultClass::kGpuLost,
                .xid = std::nullopt});
  board.SetUnmonitored(3, "Not Supported");
  std::vector<unsigned> lost = {5};  // the last scan could not read GPU 5

  ApplyTaints(board, lost, devices);
  EXPECT_THAT(devices[0].taints,
              ElementsAre(gpu::DeviceTaint{"gpu.nvidia.com/xid", "62", "NoSchedule"}));
  EXPECT_THAT(devices[1].taints, IsEmpty()) << "the other MIG device of the GPU stays offered";
  EXPECT_THAT(devices[2].taints,
              ElementsAre(gpu::DeviceTaint{"gpu.nvidia.com/xid", "48", "NoSchedule"}));
  EXPECT_THAT(devices[3].taints,
              ElementsAre(gpu::DeviceTaint{"gpu.nvidia.com/gpu-lost", "", "NoSchedule"}));
  EXPECT_THAT(devices[4].taints,
              ElementsAre(gpu::DeviceTaint{"gpu.nvidia.com/unmonitored", "", "None"}));
  EXPECT_THAT(devices[5].taints,
              ElementsAre(gpu::DeviceTaint{"gpu.nvidia.com/gpu-lost", "", "NoSchedule"}));

  std::vector<DeviceHealth> stream = HealthOf(board, lost, devices);
  ASSERT_EQ(stream.size(), devices.size());
  EXPECT_FALSE(stream[0].healthy);
  EXPECT_EQ(stream[0].message, "XID 62 (Internal micro-controller halt)");
  EXPECT_TRUE(stream[1].healthy);
  EXPECT_FALSE(stream[2].healthy);
  EXPECT_FALSE(stream[3].healthy);
  EXPECT_TRUE(stream[4].healthy);
  EXPECT_THAT(stream[4].message, HasSubstr("not monitored"));
  EXPECT_FALSE(stream[5].healthy);
  EXPECT_THAT(stream[5].message, HasSubstr("lost"));

  // Recovered: the taints go with the next application, not only the health.
  board.SetGpu(0, true);
  board.SetMig({1, 5, 0}, true);
  ApplyTaints(board, {}, devices);
  EXPECT_THAT(devices[0].taints, IsEmpty());
  EXPECT_THAT(devices[2].taints, IsEmpty());
  EXPECT_THAT(devices[5].taints, IsEmpty());
}

TEST(DraHealth, ALostGpuKeepsItsDevicesFromTheLastScanInIndexOrder) {
  gpu::DraNode now;
  now.devices = {Gpu(0), Gpu(2)};
  now.lost = {1};
  std::vector<gpu::DraDevice> kept = KeepLostDevices({Gpu(0), Gpu(1), Gpu(2)}, now);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[1].name, "gpu-1");
  EXPECT_EQ(kept[2].name, "gpu-2");
  // Never announced (lost at start): nothing to keep.
  EXPECT_EQ(KeepLostDevices({}, now).size(), 2u);
}

// The monitor over the devices the plugin announces, on a simulated node whose timeline holds the
// faults; waits on the board (no sleeps) until `done` holds for the devices' taints.
class SimulatedHealth {
 public:
  SimulatedHealth(const std::string& profile, std::chrono::milliseconds recovery) {
    library_ = testing::OpenSimulator(profile);
    if (library_ == nullptr) return;
    absl::StatusOr<gpu::DraNode> node =
        gpu::ReadDraNode(*library_, core::HostRoot("/nonexistent-host"));
    EXPECT_TRUE(node.ok()) << node.status();
    if (node.ok()) devices_ = node->devices;
    monitor_ = health::HealthMonitor::Start(
        *library_, MonitoredGpus(devices_), board_,
        {.xids = *health::XidPolicyFromEnvironment(nullptr, nullptr), .recovery_period = recovery});
  }
  ~SimulatedHealth() { monitor_.reset(); }

  bool AwaitTaints(const std::function<bool(const std::vector<gpu::DraDevice>&)>& done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    uint64_t seen = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      ApplyTaints(board_, {}, devices_);
      if (done(devices_)) return true;
      seen = board_.WaitForChangeFor(seen, std::chrono::milliseconds(500), [] { return false; });
    }
    return false;
  }
  const gpu::DraDevice& device(const std::string& name) const {
    for (const gpu::DraDevice& device : devices_) {
      if (device.name == name) return device;
    }
    ADD_FAILURE() << "no device " << name;
    return devices_.front();
  }

 private:
  std::unique_ptr<nvml::Library> library_;
  std::vector<gpu::DraDevice> devices_;
  health::HealthBoard board_;
  std::unique_ptr<health::HealthMonitor> monitor_;
};

std::string Fixture(const std::string& name) {
  return std::string(build_paths::kFixturesDir) + "/plugin/" + name;
}

TEST(DraHealthOnTheSimulator, XidsTaintTheirGpusAndApplicationXidsDoNot) {
  SimulatedHealth node(Fixture("dgx-h100-xids.yaml"), std::chrono::milliseconds(0));
  ASSERT_TRUE(node.AwaitTaints([](const std::vector<gpu::DraDevice>& devices) {
    return devices.size() == 8 && !devices[6].taints.empty();
  }));
  // XID 79 is a fall off the bus; XID 48 a memory error; XID 13 the application's.
  EXPECT_THAT(node.device("gpu-3").taints,
              ElementsAre(gpu::DeviceTaint{"gpu.nvidia.com/gpu-lost", "", "NoSchedule"}));
  EXPECT_THAT(node.device("gpu-6").taints,
              ElementsAre(gpu::DeviceTaint{"gpu.nvidia.com/xid", "48", "NoSchedule"}));
  EXPECT_THAT(node.device("gpu-1").taints, IsEmpty());
}

TEST(DraHealthOnTheSimulator, AGpuBackOnTheBusHasItsTaintLifted) {
  SimulatedHealth node(Fixture("dgx-h100-lost.yaml"), std::chrono::milliseconds(300));
  ASSERT_TRUE(node.AwaitTaints([](const std::vector<gpu::DraDevice>& devices) {
    return devices.size() == 8 && !devices[5].taints.empty();
  })) << "GPU 5 falls off the bus 1.5 s in";
  EXPECT_EQ(node.device("gpu-5").taints.front().key, "gpu.nvidia.com/gpu-lost");
  ASSERT_TRUE(node.AwaitTaints([](const std::vector<gpu::DraDevice>& devices) {
    return devices[5].taints.empty();
  })) << "GPU 5 answers again 2.5 s in, with the same UUID";
}

}  // namespace
}  // namespace gpunode::dra
