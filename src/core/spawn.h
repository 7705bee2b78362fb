// Runs a program to its end within a deadline and captures what it prints: the one way gpunode
// starts a short-lived child (a kubeconfig's credential plugin, `nvidia-cuda-mps-control`).
//
// The child starts with no signal blocked and every signal at its default action, whatever the
// caller does with its own: the daemons block their stop signals to read them from a signalfd,
// and a child that inherited that mask could not be stopped with SIGTERM.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::core {

struct SpawnOptions {
  // argv[0] is the program: a path, or looked up on PATH when it has no '/'.
  std::vector<std::string> argv = {};
  // VAR=value entries set over the process's own environment (which the child gets otherwise).
  std::vector<std::string> env = {};
  // Written to the child's stdin, which is then closed; nullopt: stdin is /dev/null.
  std::optional<std::string> input = {};
  // Where the child's stdout and stderr go. kCapture: into SpawnResult::output; kInherit: this
  // process's own (a credential plugin's prompts and errors reach the user); kDiscard: /dev/null,
  // for a program that starts a daemon which keeps them open for its life.
  enum class Stream { kCapture, kInherit, kDiscard };
  Stream stdout_to = Stream::kCapture;
  Stream stderr_to = Stream::kInherit;
  // The whole run, output and exit: the child is killed (SIGKILL) when it is not done by then.
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
  // More captured output than this kills the child too.
  size_t max_output = size_t{1} << 20;
};

struct SpawnResult {
  enum class End {
    kExited,         // exit_code is its status
    kSignalled,      // signal ended it
    kTimedOut,       // killed at the deadline
    kOutputTooLong,  // killed past max_output
  } end = End::kExited;
  int exit_code = 0;
  int signal = 0;
  std::string output;  // stdout, and stderr where captured, interleaved as written

  bool Succeeded() const { return end == End::kExited && exit_code == 0; }
  // "exited with status 3", "was killed by signal 9", "gave no answer within 10s", ...
  std::string Describe() const;
};

// An error only when the program could not be started at all (FailedPrecondition, with the
// reason: "No such file or directory"); whatever it did once started is in the result.
absl::StatusOr<SpawnResult> Spawn(const SpawnOptions& options);

}  // namespace gpunode::core
