// The device plugin's view of the MPS control daemon: a resource is offered only while its
// daemon's `.started` marker names the plan this plugin's config makes (mps_plan_key.h), so that a
// daemon still on the previous config is never taken for ready.
#include "plugin/mps/mps_readiness.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "gtest/gtest.h"
#include "host/mps_paths.h"

namespace gpunode::plugin {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr const char* kPlan2 = "plan nvidia.com/gpu replicas=2 gpus=GPU-a,GPU-b";
constexpr const char* kPlan4 = "plan nvidia.com/gpu replicas=4 gpus=GPU-a,GPU-b";

class MpsReadinessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpunode-mpsr-XXXXXX";  // unix socket paths must stay short
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    paths_ = host::MpsPaths{root_, "nvidia.com/gpu"};
    fs::create_directories(paths_.PipeDir());
    // A listener where the daemon's control socket is: the readiness only connects.
    listener_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    ASSERT_GE(listener_, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, paths_.ControlSocket().c_str(), sizeof(address.sun_path) - 1);
    ASSERT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    ASSERT_EQ(listen(listener_, 8), 0);
    std::ofstream(host::MpsReadyMarker(root_)) << "";
  }
  void TearDown() override {
    if (listener_ >= 0) close(listener_);
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  void Started(const std::string& plan) {
    std::string next = paths_.StartedMarker() + ".new";
    std::ofstream(next) << plan << "\nnvidia.com/gpu: GPU 0 (GPU-a, A10): ...\n";
    fs::rename(next, paths_.StartedMarker());
  }

  // Waits, on the board's change notifications, until the resource is in `state`.
  bool Await(const MpsReadiness& readiness, health::HealthBoard& board, MpsState state) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    bool done = false;
    std::thread watchdog([&] {
      while (!done && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(milliseconds(50));
      }
      board.Interrupt();
    });
    uint64_t seen = board.generation();
    while (readiness.state("nvidia.com/gpu") != state &&
           std::chrono::steady_clock::now() < deadline) {
      seen =
          board.WaitForChange(seen, [&] { return std::chrono::steady_clock::now() >= deadline; });
    }
    done = true;
    watchdog.join();
    return readiness.state("nvidia.com/gpu") == state;
  }

  std::string root_;
  host::MpsPaths paths_;
  int listener_ = -1;
};

TEST_F(MpsReadinessTest, ADaemonOnAnotherPlanIsNotReadyUntilItRunsThisOne) {
  Started(kPlan2);
  health::HealthBoard board;
  MpsReadiness readiness(root_, {{"nvidia.com/gpu", kPlan4}}, board, milliseconds(20));
  EXPECT_EQ(readiness.state("nvidia.com/gpu"), MpsState::kNotReady);
  EXPECT_EQ(MpsRunningPlan(root_, "nvidia.com/gpu"), kPlan2);
  EXPECT_FALSE(MpsMarkersPresent(root_, "nvidia.com/gpu", kPlan4));

  Started(kPlan4);
  EXPECT_TRUE(Await(readiness, board, MpsState::kUp));

  // The daemon moves on to another plan (its config changed first): this plugin's devices go
  // Unhealthy until it follows.
  Started(kPlan2);
  EXPECT_TRUE(Await(readiness, board, MpsState::kDown));
}

TEST_F(MpsReadinessTest, WithoutTheNodesReadyMarkerNothingIsReady) {
  Started(kPlan4);
  fs::remove(host::MpsReadyMarker(root_));
  health::HealthBoard board;
  MpsReadiness readiness(root_, {{"nvidia.com/gpu", kPlan4}}, board, milliseconds(20));
  EXPECT_EQ(readiness.state("nvidia.com/gpu"), MpsState::kNotReady);
  std::ofstream(host::MpsReadyMarker(root_)) << "";
  EXPECT_TRUE(Await(readiness, board, MpsState::kUp));
}

}  // namespace
}  // namespace gpunode::plugin
