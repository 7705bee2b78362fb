// Shared by the cluster tests: a throwaway CA and server certificate, kubeconfig files pointing
// at the API server double, and running a child process with its output captured.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gpunode::testing {

// A temporary directory removed with its contents when the object goes.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& contents) const;

 private:
  std::string path_;
};

// ca.crt, tls.crt (signed by the CA, for localhost and 127.0.0.1) and tls.key under `dir`,
// made with the openssl command. Returns false (and prints why) on failure.
bool MakeTestCertificates(const std::string& dir);

std::string ReadText(const std::string& path);
std::string Base64(const std::string& data);

// A kubeconfig whose current context points at `server` with bearer `token`, trusting the CA
// at `ca_path` (embedded as certificate-authority-data).
std::string KubeconfigYaml(const std::string& server, const std::string& ca_path,
                           const std::string& token, const std::string& ns = "default");

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv to completion, capturing stdout and stderr.
RunResult RunCommand(const std::vector<std::string>& argv);

// A long-running child (the webhook) whose stdout can be read line by line.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv);
  ~Child();
  // Blocks until a full line arrives (or the child closes stdout): no sleeping, no polling.
  bool ReadLine(std::string& line);
  // Sends SIGTERM and waits; returns the exit code.
  int Terminate();

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buffer_;
};

}  // namespace gpunode::testing
