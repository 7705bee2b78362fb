// The plugin daemon as a child process the test controls: started in the background, signalled,
// awaited, its stderr kept in a file.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gpunode::testing {

class PluginProcess {
 public:
  // Starts `argv` with `extra_env` added; stderr goes to `log_path`.
  PluginProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                std::string log_path);
  ~PluginProcess();  // SIGKILL if still running
  PluginProcess(const PluginProcess&) = delete;
  PluginProcess& operator=(const PluginProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::chrono::steady_clock::time_point started() const { return started_; }
  void Signal(int signal);
  // The exit code (128 + signal when killed), or nullopt if it is still running after `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  std::string Log() const;
  // Waits until the log holds `text` (the daemon reports some outcomes only there).
  bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout) const;

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::string log_path_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace gpunode::testing
