// core::Env: the production one (SystemEnv) and the tests' (SimulatedEnv) keep the same promises:
// a sleep ends at its deadline or at a stop, whichever is first, and a stop is seen by pollers.
#include <poll.h>
#include <pthread.h>

#include <csignal>
#include <thread>

#include "absl/synchronization/notification.h"
#include "core/system_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/simulated_env.h"

namespace gpunode::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::SimulatedEnv;

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

TEST(SystemEnv, SleepsUntilItsDeadline) {
  SystemEnv env;
  absl::Time from = env.Now();
  EXPECT_TRUE(env.SleepFor(absl::Milliseconds(20)));
  EXPECT_GE(env.Now() - from, absl::Milliseconds(20));
  EXPECT_FALSE(env.StopRequested());
  EXPECT_FALSE(Readable(env.stop_fd()));
}

TEST(SystemEnv, AStopFromAnotherThreadEndsTheSleep) {
  SystemEnv env;
  std::thread stopper([&] { env.RequestStop(); });
  absl::Time from = env.Now();
  EXPECT_FALSE(env.SleepFor(absl::Hours(1)));
  EXPECT_LT(env.Now() - from, absl::Minutes(1));
  stopper.join();
  EXPECT_TRUE(env.StopRequested());
  EXPECT_EQ(env.stop_signal(), 0);
  EXPECT_TRUE(Readable(env.stop_fd()));
  EXPECT_FALSE(env.SleepFor(absl::Hours(1))) << "a sleep after the stop ends at once";
}

TEST(SystemEnv, AStopSignalBecomesAStopRequest) {
  // The test's own thread blocks the signals first (StopOnSignals does it for the calling
  // thread only), so that the thread gtest may already run cannot take SIGTERM.
  SystemEnv env;
  ASSERT_TRUE(env.StopOnSignals({SIGUSR1}).ok());
  EXPECT_FALSE(env.StopOnSignals({SIGUSR2}).ok()) << "once per Env";
  ASSERT_EQ(kill(getpid(), SIGUSR1), 0);
  EXPECT_FALSE(env.SleepFor(absl::Minutes(1)));
  EXPECT_EQ(env.stop_signal(), SIGUSR1);
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr);
}

TEST(SystemEnv, RunsPrograms) {
  SystemEnv env;
  absl::StatusOr<SpawnResult> result = env.Spawn({.argv = {"echo", "hello"}});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->output, "hello\n");
}

TEST(SimulatedEnv, ASleepMovesTheClockAtOnce) {
  SimulatedEnv env;
  absl::Time from = env.Now();
  std::vector<absl::Time> seen;
  env.OnSleep([&](absl::Time now) { seen.push_back(now); });
  EXPECT_TRUE(env.SleepFor(absl::Hours(2)));
  EXPECT_TRUE(env.SleepUntil(from));  // a deadline passed: no move back
  EXPECT_EQ(env.Now() - from, absl::Hours(2));
  EXPECT_THAT(seen, ElementsAre(from + absl::Hours(2), from + absl::Hours(2)));
  EXPECT_EQ(env.sleeps(), 2);
  EXPECT_EQ(env.slept(), absl::Hours(2));
}

TEST(SimulatedEnv, AHookThatStopsEndsTheSleepWithFalse) {
  SimulatedEnv env;
  env.OnSleep([&](absl::Time) { env.RequestStop(SIGTERM); });
  EXPECT_FALSE(env.SleepFor(absl::Seconds(1)));
  EXPECT_EQ(env.stop_signal(), SIGTERM);
  EXPECT_TRUE(Readable(env.stop_fd()));
  EXPECT_FALSE(env.SleepFor(absl::Seconds(1)));
  EXPECT_EQ(env.sleeps(), 1) << "a sleep after the stop does not happen";
}

TEST(SimulatedEnv, WithoutAdvanceOnSleepASleepWaitsForTheTest) {
  SimulatedEnv env({.advance_on_sleep = false});
  absl::Time from = env.Now();
  absl::Notification woke;
  std::thread sleeper([&] {
    EXPECT_TRUE(env.SleepUntil(from + absl::Minutes(5)));
    woke.Notify();
  });
  env.Advance(absl::Minutes(4));
  EXPECT_FALSE(woke.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  env.Advance(absl::Minutes(1));
  EXPECT_TRUE(woke.WaitForNotificationWithTimeout(absl::Seconds(30)));
  sleeper.join();

  std::thread stopped([&] { EXPECT_FALSE(env.SleepFor(absl::Hours(1))); });
  env.RequestStop();
  stopped.join();
}

TEST(SimulatedEnv, APauseWaitsAfterAStopToo) {
  SimulatedEnv env;
  absl::Time from = env.Now();
  env.RequestStop();
  env.Pause(absl::Milliseconds(20));
  EXPECT_EQ(env.Now() - from, absl::Milliseconds(20));
}

TEST(SystemEnv, APauseWaitsAfterAStopToo) {
  SystemEnv env;
  env.RequestStop();
  absl::Time from = env.Now();
  env.Pause(absl::Milliseconds(20));
  EXPECT_GE(env.Now() - from, absl::Milliseconds(20));
}

TEST(SimulatedEnv, ProgramsAnswerWhatTheTestScripts) {
  SimulatedEnv env;
  absl::StatusOr<SpawnResult> unscripted = env.Spawn({.argv = {"nvidia-smi"}});
  ASSERT_FALSE(unscripted.ok());
  EXPECT_THAT(unscripted.status().message(), HasSubstr("nvidia-smi"));
  env.OnSpawn([](const SpawnOptions& options) -> absl::StatusOr<SpawnResult> {
    return SpawnResult{.end = SpawnResult::End::kExited, .exit_code = 3, .output = options.argv[1]};
  });
  absl::StatusOr<SpawnResult> scripted = env.Spawn({.argv = {"tool", "--flag"}});
  ASSERT_TRUE(scripted.ok());
  EXPECT_EQ(scripted->exit_code, 3);
  EXPECT_EQ(scripted->output, "--flag");
  EXPECT_THAT(env.spawned(), ElementsAre(ElementsAre("nvidia-smi"), ElementsAre("tool", "--flag")));
}

TEST(SimulatedEnv, ReadsTheHostFromItsFixtureTree) {
  SimulatedEnv env({.host_root = "/fixture"});
  EXPECT_EQ(env.host().Resolve("/proc/modules"), "/fixture/proc/modules");
}

}  // namespace
}  // namespace gpunode::core
