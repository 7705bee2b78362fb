// What the exporter and labels tests share: a program running in the background (the exporter,
// Prometheus), free loopback ports, temporary directories, HTTP GETs and bounded polling.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace gpunode::testing {

// Starts `argv` with `extra_env` added; stdout and stderr go to files in a temporary directory.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv,
                    const std::vector<std::string>& extra_env = {});
  ~BackgroundProcess();  // kills it if it still runs
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  // True while the process has not exited.
  bool Running();
  // Sends `signal` and waits up to 20 s; the exit code (128 + signal when killed by one).
  int Stop(int signal);
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::string dir_;
};

// A directory under $TMPDIR (or /tmp), removed with its contents at destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "gpunode-test");
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreeLoopbackPort();

struct HttpResult {
  int status = 0;  // 0 when no answer came
  std::string body;
  std::string content_type;
};
HttpResult HttpGet(int port, const std::string& path);

// Calls `done` until it returns true or `limit` passes; true when it did.
bool Eventually(const std::function<bool()>& done,
                std::chrono::milliseconds limit = std::chrono::seconds(10));

std::string ReadText(const std::string& path);
void WriteText(const std::string& path, const std::string& text);

// The value of the first sample of `metric` whose labels contain every `name="value"` in
// `labels`; nullopt-like NaN when there is none.
double SampleValue(const std::string& exposition, const std::string& metric,
                   const std::vector<std::string>& labels = {});
// The number of samples of `metric` (with those labels).
int SampleCount(const std::string& exposition, const std::string& metric,
                const std::vector<std::string>& labels = {});

}  // namespace gpunode::testing
