#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

extern char** environ;

namespace gpunode::testing {
namespace {

// posix_spawn rather than fork: the tests run gRPC and HTTP threads, and a forked child of a
// threaded process may only make async-signal-safe calls before exec.
int Spawn(pid_t& pid, const std::vector<std::string>& argv,
          const std::vector<std::string>& extra_env, const posix_spawn_file_actions_t* actions) {
  std::vector<std::string> env_strings;
  // A variable given in extra_env replaces this process's one of that name: with both, programs
  // disagree on which wins (glibc's getenv and Go take the first).
  auto overridden = [&](std::string_view e) {
    std::string_view name = e.substr(0, e.find('='));
    return std::any_of(extra_env.begin(), extra_env.end(), [&](const std::string& x) {
      return std::string_view(x).substr(0, x.find('=')) == name;
    });
  };
  for (char** e = environ; *e != nullptr; ++e) {
    if (!overridden(*e)) env_strings.emplace_back(*e);
  }
  for (const std::string& e : extra_env) env_strings.push_back(e);
  std::vector<char*> envp, args;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  return posix_spawn(&pid, args[0], actions, nullptr, args.data(), envp.data());
}

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::vector<std::string> WithOwnDev(std::vector<std::string> argv) {
  if (geteuid() != 0) return argv;
  // The new /dev is made under /tmp and moved over /dev; its empty directory is removed after.
  static constexpr char kOwnDev[] = R"(set -e
new=$(mktemp -d /tmp/gpunode-dev-XXXXXX)
mount -t tmpfs -o mode=0755,nosuid tmpfs "$new"
for node in null zero full random urandom tty; do
  : >"$new/$node"
  mount --bind "/dev/$node" "$new/$node"
done
mkdir -m 1777 "$new/shm"
ln -s /proc/self/fd "$new/fd"
mount --move "$new" /dev
rmdir "$new"
exec "$@")";
  std::vector<std::string> wrapped = {"/usr/bin/unshare", "--mount", "--propagation", "private",
                                      "/bin/sh",          "-c",      kOwnDev,         "own-dev"};
  wrapped.insert(wrapped.end(), std::make_move_iterator(argv.begin()),
                 std::make_move_iterator(argv.end()));
  return wrapped;
}

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::string>& extra_env, const std::string& input) {
  int out_pipe[2], err_pipe[2], in_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 ||
      pipe2(in_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  pid_t pid = 0;
  int rc = Spawn(pid, argv, extra_env, &actions);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(rc));

  // Feed stdin and drain both outputs together so neither side blocks on a full pipe.
  ProcessResult result;
  size_t written = 0;
  if (input.empty()) close(in_pipe[1]);
  int open_outputs = 2;
  while (open_outputs > 0) {
    pollfd fds[3] = {{out_pipe[0], POLLIN, 0},
                     {err_pipe[0], POLLIN, 0},
                     {written < input.size() ? in_pipe[1] : -1, POLLOUT, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].revents != 0) {
      ssize_t n = write(in_pipe[1], input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if (n < 0 || written == input.size()) close(in_pipe[1]);
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents == 0 || fds[i].fd < 0) continue;
      char buffer[65536];
      ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        (i == 0 ? result.out : result.err).append(buffer, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        (i == 0 ? out_pipe[0] : err_pipe[0]) = -1;
        --open_outputs;
      }
    }
    if (out_pipe[0] < 0 && err_pipe[0] < 0) break;
  }
  if (written < input.size() && !input.empty()) close(in_pipe[1]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = DecodeStatus(status);
  return result;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv,
                                     const std::vector<std::string>& extra_env)
    : BackgroundProcess(argv, Options{.extra_env = extra_env}) {}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv, Options options)
    : stdout_path_(std::move(options.stdout_path)), stderr_path_(std::move(options.stderr_path)) {
  if ((stdout_path_.empty() && !options.stdout_pipe) || stderr_path_.empty()) {
    own_dir_.emplace("gpunode-proc");
    if (stdout_path_.empty() && !options.stdout_pipe) stdout_path_ = own_dir_->path() + "/stdout";
    if (stderr_path_.empty()) stderr_path_ = own_dir_->path() + "/stderr";
  }
  if (options.stdout_pipe) stdout_path_.clear();
  int out_pipe[2] = {-1, -1};
  if (options.stdout_pipe && pipe2(out_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (options.stdout_pipe) {
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  } else {
    posix_spawn_file_actions_addopen(&actions, 1, stdout_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  if (stderr_path_ == stdout_path_) {
    // One open file description for both, so neither stream overwrites the other.
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  } else {
    posix_spawn_file_actions_addopen(&actions, 2, stderr_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  started_ = std::chrono::steady_clock::now();
  int rc = Spawn(pid_, argv, options.extra_env, &actions);
  posix_spawn_file_actions_destroy(&actions);
  if (options.stdout_pipe) {
    close(out_pipe[1]);
    stdout_fd_ = out_pipe[0];
  }
  if (rc != 0) {
    if (stdout_fd_ >= 0) close(stdout_fd_);
    throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(rc));
  }
  // Lets Wait sleep in poll until the exit; without it (old kernels) Wait polls waitpid.
  // (The raw call: glibc 2.36 declares pidfd_open without C linkage.)
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
}

BackgroundProcess::~BackgroundProcess() {
  if (Running()) {
    kill(pid_, SIGKILL);
    Wait(std::chrono::hours(1));
  }
  if (pidfd_ >= 0) close(pidfd_);
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

bool BackgroundProcess::Running() { return !Wait(std::chrono::milliseconds(0)).has_value(); }

void BackgroundProcess::Signal(int signal) {
  if (!exit_code_) kill(pid_, signal);
}

std::optional<int> BackgroundProcess::Wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!exit_code_) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = DecodeStatus(status);
      break;
    }
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    if (pidfd_ >= 0) {
      pollfd exited = {pidfd_, POLLIN, 0};
      poll(&exited, 1, static_cast<int>(left.count()));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return exit_code_;
}

int BackgroundProcess::Stop(int signal) {
  if (!Running()) return *exit_code_;
  Signal(signal);
  if (std::optional<int> code = Wait(std::chrono::seconds(20))) return *code;
  kill(pid_, SIGKILL);
  return Wait(std::chrono::hours(1)).value_or(-1);
}

std::string BackgroundProcess::Stdout() const {
  return stdout_path_.empty() ? "" : ReadFile(stdout_path_);
}

std::string BackgroundProcess::Stderr() const { return ReadFile(stderr_path_); }

bool BackgroundProcess::WaitForLog(const std::string& text,
                                   std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Log().find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    // A log file gives no change notification that is worth the code here; poll it finely.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

bool BackgroundProcess::ReadLine(std::string& line) {
  if (stdout_fd_ < 0) return false;
  for (;;) {
    size_t nl = line_buffer_.find('\n');
    if (nl != std::string::npos) {
      line = line_buffer_.substr(0, nl);
      line_buffer_.erase(0, nl + 1);
      return true;
    }
    char buffer[4096];
    ssize_t n = read(stdout_fd_, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    line_buffer_.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace gpunode::testing
