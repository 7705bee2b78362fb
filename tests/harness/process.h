// Runs a program the way a user would, capturing stdout, stderr and the exit code.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gpunode::testing {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal number when killed by a signal
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] is a path) with `extra_env` ("NAME=value") added to this process's
// environment, feeding `input` on stdin, and waits for it to exit.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::string>& extra_env = {},
                         const std::string& input = "");

}  // namespace gpunode::testing
