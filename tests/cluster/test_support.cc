#include "test_support.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/escaping.h"

namespace gpunode::testing {

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "gpunode-cluster-XXXXXX").string();
  char* made = ::mkdtemp(pattern.data());
  path_ = made ? made : "";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Write(const std::string& name, const std::string& contents) const {
  std::string p = path_ + "/" + name;
  std::ofstream(p) << contents;
  return p;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Base64(const std::string& data) { return absl::Base64Escape(data); }

RunResult RunCommand(const std::vector<std::string>& argv) {
  RunResult result;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) return result;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    _exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  // Drain both pipes without deadlocking on a full one.
  fd_set fds;
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    FD_ZERO(&fds);
    if (out_open) FD_SET(out_pipe[0], &fds);
    if (err_open) FD_SET(err_pipe[0], &fds);
    if (::select(std::max(out_pipe[0], err_pipe[0]) + 1, &fds, nullptr, nullptr, nullptr) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (auto [fd, open, sink] : {std::tuple{out_pipe[0], &out_open, &result.out},
                                  std::tuple{err_pipe[0], &err_open, &result.err}}) {
      if (!*open || !FD_ISSET(fd, &fds)) continue;
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) {
        *open = false;
      } else {
        sink->append(buf, static_cast<size_t>(n));
      }
    }
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

bool MakeTestCertificates(const std::string& dir) {
  std::string ext = dir + "/ext.cnf";
  std::ofstream(ext) << "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                        "basicConstraints=CA:FALSE\n"
                        "keyUsage=digitalSignature,keyEncipherment\n"
                        "extendedKeyUsage=serverAuth\n";
  std::string curve = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
  std::string script =
      "set -e; cd '" + dir +
      "'; "
      "openssl req -x509 " +
      curve +
      "-keyout ca.key -out ca.crt -days 2 -subj /CN=gpunode-test-ca; "
      "openssl req " +
      curve +
      "-keyout tls.key -out tls.csr -subj /CN=localhost; "
      "openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out tls.crt "
      "-days 2 -extfile ext.cnf";
  RunResult r = RunCommand({"/bin/sh", "-c", script});
  if (r.exit_code != 0) std::cerr << "openssl failed: " << r.err << "\n";
  return r.exit_code == 0;
}

std::string KubeconfigYaml(const std::string& server, const std::string& ca_path,
                           const std::string& token, const std::string& ns) {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "clusters:\n"
         "- name: double\n"
         "  cluster:\n"
         "    server: " +
         server +
         "\n"
         "    certificate-authority-data: " +
         Base64(ReadText(ca_path)) +
         "\n"
         "users:\n"
         "- name: tester\n"
         "  user:\n"
         "    token: " +
         token +
         "\n"
         "contexts:\n"
         "- name: double\n"
         "  context:\n"
         "    cluster: double\n"
         "    user: tester\n"
         "    namespace: " +
         ns +
         "\n"
         "current-context: double\n";
}

Child::Child(const std::vector<std::string>& argv) {
  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return;
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out_pipe[1], 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    _exit(127);
  }
  ::close(out_pipe[1]);
  out_fd_ = out_pipe[0];
}

Child::~Child() {
  if (pid_ > 0) Terminate();
  if (out_fd_ >= 0) ::close(out_fd_);
}

bool Child::ReadLine(std::string& line) {
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return true;
    }
    char buf[4096];
    ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

int Child::Terminate() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace gpunode::testing
