#include "plugin/mps/mps_control.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/sigpipe_block.h"

extern char** environ;

namespace gpunode::plugin {
namespace {

constexpr const char* kProgram = "nvidia-cuda-mps-control";

bool Executable(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// The process environment without the variables `extra` sets, then `extra`.
std::vector<std::string> Environment(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    bool replaced = false;
    for (const std::string& x : extra) {
      replaced |= absl::StartsWith(entry, x.substr(0, x.find('=') + 1));
    }
    if (!replaced) out.push_back(entry);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

absl::StatusOr<std::string> FindMpsControl(const std::string& driver_root) {
  if (const char* path = std::getenv("PATH")) {
    for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
      std::string candidate = absl::StrCat(dir, "/", kProgram);
      if (Executable(candidate)) return candidate;
    }
  }
  std::string root = driver_root == "/" ? "" : driver_root;
  for (const char* dir : {"/usr/bin/", "/bin/"}) {
    std::string candidate = absl::StrCat(root, dir, kProgram);
    if (Executable(candidate)) return candidate;
  }
  return absl::NotFoundError(
      absl::StrCat(kProgram, " is neither on PATH nor in ", root,
                   "/usr/bin; install NVIDIA's MPS package "
                   "(nvidia-cuda-mps) or point --driver-root at the driver's installation"));
}

absl::Status MpsControl::StartDaemon(const std::vector<std::string>& uuids) const {
  // The daemon keeps the launcher's stdout open for its life: give it none to read from.
  absl::StatusOr<std::string> out = Run(
      {binary_, "-d"}, std::nullopt,
      {absl::StrCat("CUDA_VISIBLE_DEVICES=", absl::StrJoin(uuids, ","))}, std::chrono::seconds(10));
  return out.status();
}

absl::StatusOr<std::string> MpsControl::Send(const std::string& command,
                                             std::chrono::milliseconds timeout) const {
  absl::StatusOr<std::string> out = Run({binary_}, command + "\n", {}, timeout);
  if (!out.ok()) return out.status();
  return std::string(absl::StripTrailingAsciiWhitespace(*out));
}

absl::StatusOr<std::string> MpsControl::Run(const std::vector<std::string>& args,
                                            const std::optional<std::string>& input,
                                            const std::vector<std::string>& extra_env,
                                            std::chrono::milliseconds timeout) const {
  std::string what = absl::StrCat(binary_, " (", paths_.PipeDir(), ")");
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return absl::InternalError(absl::StrCat(what, ": pipe"));
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return absl::InternalError(absl::StrCat(what, ": pipe"));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (input) {
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, every;
  sigemptyset(&none);
  sigfillset(&every);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &every);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> env = extra_env;
  env.push_back(absl::StrCat("CUDA_MPS_PIPE_DIRECTORY=", paths_.PipeDir()));
  env.push_back(absl::StrCat("CUDA_MPS_LOG_DIRECTORY=", paths_.LogDir()));
  std::vector<std::string> envp_strings = Environment(env);
  std::vector<std::string> argv_strings = args;
  std::vector<char*> argv = Pointers(argv_strings), envp = Pointers(envp_strings);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, binary_.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    return absl::FailedPreconditionError(absl::StrCat(what, ": ", std::strerror(rc)));
  }
  // The commands are a few bytes: the pipe buffer takes them without blocking. The program
  // exits without reading them when no daemon listens, which must not end this process.
  {
    core::SigpipeBlock quiet;
    if (input && !input->empty() && write(in[1], input->data(), input->size()) < 0) {
      // The program exited before reading; its status below says why.
    }
    close(in[1]);
  }
  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left = [&deadline] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now());
  };
  bool timed_out = false;
  while (true) {
    if (left().count() <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd fd = {out[0], POLLIN, 0};
    int ready = poll(&fd, 1, static_cast<int>(left().count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buffer[4096];
    ssize_t n = read(out[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buffer, static_cast<size_t>(n));
  }
  close(out[0]);
  // The output is done, but the program may still run: `-d` waits until its daemon says it
  // listens. That wait is bounded by the same deadline.
  int status = 0;
  while (!timed_out) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (left().count() <= 0) {
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::min(left(), std::chrono::milliseconds(10)));
  }
  if (timed_out) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  std::string said(absl::StripAsciiWhitespace(output));
  if (timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat(what, ": no answer within ", timeout.count(), " ms"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::UnavailableError(absl::StrCat(what, ": ", said.empty() ? "failed" : said));
  }
  // The program exits 0 on a command the daemon does not know, and says so.
  if (absl::StartsWith(said, "Unknown command") || absl::StrContains(said, "Cannot find")) {
    return absl::UnavailableError(absl::StrCat(what, ": ", said));
  }
  return output;
}

}  // namespace gpunode::plugin
