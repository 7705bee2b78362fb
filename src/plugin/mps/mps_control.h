// NVIDIA's nvidia-cuda-mps-control, the one client of its control daemon's pipe protocol: it
// starts the daemon (-d) and sends it one command per run on stdin, printing the answer.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/env.h"
#include "host/mps_paths.h"

namespace gpunode::plugin {

// nvidia-cuda-mps-control: the first on PATH, else under `driver_root` (usr/bin, bin).
absl::StatusOr<std::string> FindMpsControl(const std::string& driver_root);

class MpsControl {
 public:
  // The program runs through `env`, which outlives this.
  MpsControl(std::string binary, host::MpsPaths paths, core::Env& env)
      : binary_(std::move(binary)), paths_(paths), env_(env) {}

  const host::MpsPaths& paths() const { return paths_; }

  // Starts the control daemon for this resource (`-d`, which forks it away and returns) with
  // CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY and CUDA_VISIBLE_DEVICES = `uuids`.
  absl::Status StartDaemon(const std::vector<std::string>& uuids) const;

  // Sends one command ("get_default_active_thread_percentage") and returns the answer without
  // its trailing newline. Fails when no daemon answers on the pipe, the program fails, or it
  // does not finish within `timeout`.
  absl::StatusOr<std::string> Send(const std::string& command, std::chrono::milliseconds timeout =
                                                                   std::chrono::seconds(5)) const;

 private:
  // With no `input`, the program gets /dev/null for stdin, stdout and stderr. The program is
  // killed when it has not exited within `timeout`, and starts with no signal blocked whatever
  // this process blocks (the daemon it forks keeps that mask and must still take SIGTERM).
  absl::StatusOr<std::string> Run(const std::vector<std::string>& args,
                                  const std::optional<std::string>& input,
                                  const std::vector<std::string>& extra_env,
                                  std::chrono::milliseconds timeout) const;

  std::string binary_;
  host::MpsPaths paths_;
  core::Env& env_;
};

}  // namespace gpunode::plugin
