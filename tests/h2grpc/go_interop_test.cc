// The real binary's device plugin against Go's gRPC (tests/h2grpc/go_peer), the library the
// kubelet is built on: registration with the kubelet dialling back inside Register, the options,
// ListAndWatch, Allocate, GetPreferredAllocation, an error status, a request far beyond one
// HTTP/2 frame, and the stream's end when the plugin stops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include "build_paths.h"
#include "process.h"
#include "temp_dir.h"

namespace gpunode::testing {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(GoGrpcInteropTest, TheKubeletsGrpcRegistersListsAllocatesAndSeesTheStreamEnd) {
  TempDir dir("h2grpc-go");
  BackgroundProcess peer({build_paths::kGoPeer, dir.path()},
                         BackgroundProcess::Options{.stdout_pipe = true});
  std::string line;
  ASSERT_TRUE(peer.ReadLine(line)) << peer.Stderr();
  ASSERT_EQ(line, "listening");

  BackgroundProcess plugin(
      {build_paths::kBinary, "--sim", "dgx-h100", "device-plugin", "--kubelet-dir", dir.path()});
  std::vector<std::string> lines;
  while (peer.ReadLine(line)) {
    lines.push_back(line);
    if (line == "watching" || line.rfind("error", 0) == 0) break;
  }
  ASSERT_EQ(lines.size(), 8u) << ::testing::PrintToString(lines) << "\n" << plugin.Log();
  EXPECT_EQ(lines[0],
            "register version=v1beta1 endpoint=nvidia-gpu.sock resource=nvidia.com/gpu "
            "preferred=1");
  // Asked inside Register, over a connection the Go client opened to the plugin's socket.
  EXPECT_EQ(lines[1], "options preferred=1");
  EXPECT_EQ(lines[2], "list devices=8 healthy=8");
  EXPECT_THAT(lines[3],
              MatchesRegex("allocate NVIDIA_VISIBLE_DEVICES=GPU-[-0-9a-f]+,GPU-[-0-9a-f]+"));
  EXPECT_THAT(lines[4], MatchesRegex("preferred GPU-[-0-9a-f]+,GPU-[-0-9a-f]+"));
  // INVALID_ARGUMENT with the plugin's message, percent-decoded by Go.
  EXPECT_THAT(lines[5],
              MatchesRegex("unknown code=3 message=.*unknown device: GPU-does-not-exist"));
  // Just over 1 MiB: 64 frames of 16 KiB, and 16 times the initial window.
  EXPECT_THAT(lines[6], MatchesRegex("large bytes=10486[0-9][0-9] containers=1"));

  plugin.Signal(SIGTERM);
  ASSERT_TRUE(peer.ReadLine(line)) << plugin.Log();
  // The handler's OK status reaches Go's client before the connection closes.
  EXPECT_EQ(line, "stream ended code=0");
  EXPECT_EQ(plugin.Wait(milliseconds(10000)), 0) << plugin.Log();
  EXPECT_EQ(peer.Wait(milliseconds(10000)), 0) << peer.Stderr();
  EXPECT_THAT(plugin.Log(), HasSubstr("Registered device plugin for 'nvidia.com/gpu'"));
  EXPECT_THAT(plugin.Log(), ::testing::Not(HasSubstr("failed")));
}

}  // namespace
}  // namespace gpunode::testing
