// Runs programs the way a user would: to completion with their output captured, or in the
// background (daemons, servers) while a test talks to them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "temp_dir.h"

namespace gpunode::testing {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal number when killed by a signal
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] is a path) with `extra_env` ("NAME=value") added to this process's
// environment (replacing a variable of the same name), feeding `input` on stdin, and waits for it
// to exit.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::string>& extra_env = {},
                         const std::string& input = "");

// `argv` to run with a /dev of its own when this process is root: a tmpfs holding the host's null,
// zero, full, random, urandom and tty, in a mount namespace of the program's. NVIDIA's libraries,
// called by root on a host without their kernel module, create the device nodes they miss
// (/dev/nvidiactl); a test must not leave them behind. `argv` unchanged for another user, for whom
// the libraries create nothing.
std::vector<std::string> WithOwnDev(std::vector<std::string> argv);

// `argv` started in the background with stdin on /dev/null; killed (SIGKILL) and reaped when the
// object goes if it still runs.
class BackgroundProcess {
 public:
  struct Options {
    std::vector<std::string> extra_env = {};  // "NAME=value", added to this process's environment
    // Files for stdout and stderr; empty means one in a directory the object owns. Both may name
    // the same file, which then gets the two streams interleaved as written.
    std::string stdout_path = {};
    std::string stderr_path = {};
    // stdout goes to a pipe read with ReadLine instead, for a program that announces something
    // (its port) there: the test blocks on the line instead of polling for it.
    bool stdout_pipe = false;
  };

  explicit BackgroundProcess(const std::vector<std::string>& argv,
                             const std::vector<std::string>& extra_env = {});
  BackgroundProcess(const std::vector<std::string>& argv, Options options);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::chrono::steady_clock::time_point started() const { return started_; }
  // True while the process has not exited.
  bool Running();
  void Signal(int signal);
  // The exit code (128 + signal when killed by one), or nullopt if it still runs after `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // Sends `signal` and waits up to 20 s, then SIGKILL; the exit code.
  int Stop(int signal);

  std::string Stdout() const;
  std::string Stderr() const;
  // What the programs of this project log: stderr.
  std::string Log() const { return Stderr(); }
  // Waits until stderr holds `text` (a daemon reports some outcomes only in its log).
  bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout) const;
  // With Options::stdout_pipe: blocks until a whole line arrives (false once stdout closes).
  bool ReadLine(std::string& line);

 private:
  pid_t pid_ = -1;
  int pidfd_ = -1;
  std::optional<int> exit_code_;
  std::chrono::steady_clock::time_point started_;
  std::optional<TempDir> own_dir_;  // holds the output files no path was given for
  std::string stdout_path_;
  std::string stderr_path_;
  int stdout_fd_ = -1;
  std::string line_buffer_;
};

}  // namespace gpunode::testing
