// core::Spawn: the one way gpunode runs a short-lived program.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "core/spawn.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpunode::core {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

SpawnResult SpawnToEnd(SpawnOptions options) {
  absl::StatusOr<SpawnResult> result = Spawn(options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : SpawnResult{};
}

// The signals 1-31 of a /proc/PID/status mask line ("SigBlk:\t0000000000010000"); glibc keeps 32
// and 33 for itself, and no program sets them.
uint64_t StandardSignals(const std::string& status, const std::string& field) {
  size_t at = status.find(field + ":\t");
  if (at == std::string::npos) return ~uint64_t{0};
  return std::stoull(status.substr(at + field.size() + 2, 16), nullptr, 16) & 0x7fffffffu;
}

TEST(Spawn, CapturesStdoutAndTheExitStatus) {
  SpawnResult r = SpawnToEnd({.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"},
                              .stderr_to = SpawnOptions::Stream::kCapture});
  EXPECT_EQ(r.end, SpawnResult::End::kExited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.Succeeded());
  EXPECT_EQ(r.Describe(), "exited with status 3");
  EXPECT_THAT(r.output, HasSubstr("out\n"));
  EXPECT_THAT(r.output, HasSubstr("err\n"));
}

TEST(Spawn, GivesTheInputAndSetsTheEnvironmentOverOurs) {
  SpawnResult r =
      SpawnToEnd({.argv = {"sh", "-c", "read line; echo \"$line $GPUNODE_SPAWN_TEST $HOME\""},
                  .env = {"GPUNODE_SPAWN_TEST=set", "HOME=/elsewhere"},
                  .input = "given\n"});
  EXPECT_TRUE(r.Succeeded()) << r.Describe();
  EXPECT_EQ(r.output, "given set /elsewhere\n");
}

// A daemon blocks its stop signals to read them from a signalfd, and a shell may have left some
// ignored: the child gets neither, so SIGTERM stops it.
TEST(Spawn, TheChildStartsWithNoSignalBlockedOrIgnored) {
  sigset_t stop, old_mask;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &stop, &old_mask), 0);
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGHUP, &ignore, &previous), 0);
  SpawnResult r = SpawnToEnd({.argv = {"grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status"}});
  sigaction(SIGHUP, &previous, nullptr);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  EXPECT_EQ(StandardSignals(r.output, "SigBlk"), 0u) << r.output;
  EXPECT_EQ(StandardSignals(r.output, "SigIgn"), 0u) << r.output;
}

TEST(Spawn, AChildPastItsDeadlineIsKilled) {
  auto start = std::chrono::steady_clock::now();
  SpawnResult r = SpawnToEnd({.argv = {"sleep", "30"}, .timeout = milliseconds(200)});
  EXPECT_EQ(r.end, SpawnResult::End::kTimedOut);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// `nvidia-cuda-mps-control -d` closes its output at once and exits only when its daemon
// listens: the deadline bounds that wait too.
TEST(Spawn, TheDeadlineCoversTheWaitAfterTheOutputCloses) {
  SpawnResult r = SpawnToEnd(
      {.argv = {"sh", "-c", "exec >/dev/null 2>&1; sleep 30"}, .timeout = milliseconds(200)});
  EXPECT_EQ(r.end, SpawnResult::End::kTimedOut);
}

TEST(Spawn, TooMuchOutputKillsTheChild) {
  SpawnResult r = SpawnToEnd({.argv = {"yes"}, .max_output = 4096});
  EXPECT_EQ(r.end, SpawnResult::End::kOutputTooLong);
  EXPECT_GT(r.output.size(), 4096u);
}

TEST(Spawn, DiscardedOutputIsNotWaitedFor) {
  SpawnResult r = SpawnToEnd({.argv = {"sh", "-c", "echo hidden; echo hidden >&2"},
                              .stdout_to = SpawnOptions::Stream::kDiscard,
                              .stderr_to = SpawnOptions::Stream::kDiscard});
  EXPECT_TRUE(r.Succeeded());
  EXPECT_EQ(r.output, "");
}

TEST(Spawn, AProgramThatCannotStartIsAnError) {
  absl::StatusOr<SpawnResult> r = Spawn({.argv = {"/nonexistent/program"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "No such file or directory");
  r = Spawn({.argv = {"gpunode-no-such-program-on-path"}});
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace gpunode::core
