// MpsControl against small stand-ins for nvidia-cuda-mps-control, for what the real program does
// only now and then: exit without reading the command, keep running after closing its output,
// and inherit this process's blocked signals. The real program is run in mps_test.cc.
#include "plugin/mps/mps_control.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "core/system_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpunode::plugin {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class MpsControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpunode-mps-control-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    fs::create_directories(dir_ + "/nvidia.com/gpu/pipe");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A program that runs `script` with `interpreter`.
  MpsControl Program(const std::string& script, const std::string& interpreter = "/bin/sh") {
    std::string path = dir_ + "/nvidia-cuda-mps-control";
    std::ofstream(path) << "#!" << interpreter << "\n" << script << "\n";
    chmod(path.c_str(), 0755);
    return MpsControl(path, host::MpsPaths{dir_, "nvidia.com/gpu"}, env_);
  }

  std::string dir_;
  core::SystemEnv env_;  // the real program runs
};

// With no daemon the real program exits before reading its command; writing the command then
// must fail quietly, not raise SIGPIPE and end this process.
TEST_F(MpsControlTest, AProgramThatExitsWithoutReadingTheCommandDoesNotEndTheCaller) {
  MpsControl control = Program("echo 'Cannot find MPS control daemon process'; exit 1");
  for (int i = 0; i < 200; ++i) {
    absl::StatusOr<std::string> answer = control.Send("get_default_active_thread_percentage");
    ASSERT_FALSE(answer.ok());
    ASSERT_THAT(answer.status().message(), HasSubstr("Cannot find MPS control daemon process"));
  }
}

// `-d` returns only once its daemon listens; one that never does is killed at the deadline
// rather than waited for forever, though its output closed long before.
TEST_F(MpsControlTest, AProgramThatClosesItsOutputButRunsOnIsKilledAtTheDeadline) {
  MpsControl control = Program("exec >&- 2>&-; sleep 30");
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> answer = control.Send("quit", std::chrono::milliseconds(300));
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kDeadlineExceeded) << answer.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// The daemon inherits what the program inherits: the signals a caller blocks for its signalfd
// must not stay blocked there, or SIGTERM would not stop it.
TEST_F(MpsControlTest, TheProgramStartsWithNoSignalBlocked) {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &old), 0);
  // awk, as the shell unblocks every signal itself.
  MpsControl control = Program(
      R"(BEGIN { while ((getline line < "/proc/self/status") > 0) if (line ~ /SigBlk/) print line })",
      "/usr/bin/awk -f");
  absl::StatusOr<std::string> answer = control.Send("get_default_active_thread_percentage");
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_THAT(*answer, ::testing::MatchesRegex("SigBlk:\\s+0+"));
}

}  // namespace
}  // namespace gpunode::plugin
