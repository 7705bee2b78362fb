#include "core/spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/sigpipe_block.h"
#include "core/unique_fd.h"

extern char** environ;

namespace gpunode::core {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

absl::StatusOr<Pipe> MakePipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// The process environment less the variables `extra` sets, then `extra`.
std::vector<std::string> Environment(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    std::string_view name = entry.substr(0, entry.find('=') + 1);
    bool replaced = std::any_of(extra.begin(), extra.end(), [&](const std::string& x) {
      return std::string_view(x).substr(0, x.find('=') + 1) == name;
    });
    if (!replaced) out.emplace_back(entry);
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

// posix_spawn's file actions and attributes, destroyed with the scope.
class SpawnSetup {
 public:
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
    sigset_t none, every;
    sigemptyset(&none);
    sigfillset(&every);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &every);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  ~SpawnSetup() {
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  // Points the child's `target` descriptor at /dev/null, at `capture`, or leaves it as it is.
  void Route(int target, SpawnOptions::Stream stream, const UniqueFd& capture) {
    if (stream == SpawnOptions::Stream::kDiscard) {
      posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0);
    } else if (stream == SpawnOptions::Stream::kCapture) {
      posix_spawn_file_actions_adddup2(&actions, capture.get(), target);
    }
  }

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
};

milliseconds Left(steady_clock::time_point deadline) {
  return std::max(milliseconds(0),
                  std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now()));
}

}  // namespace

std::string SpawnResult::Describe() const {
  switch (end) {
    case End::kExited:
      return absl::StrCat("exited with status ", exit_code);
    case End::kSignalled:
      return absl::StrCat("was killed by signal ", signal);
    case End::kTimedOut:
      return "did not finish in time";
    case End::kOutputTooLong:
      return "printed too much";
  }
  return "ended";
}

absl::StatusOr<SpawnResult> Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("spawn: no program");
  const std::string& program = options.argv[0];
  using Stream = SpawnOptions::Stream;
  bool capturing = options.stdout_to == Stream::kCapture || options.stderr_to == Stream::kCapture;

  SpawnSetup setup;
  Pipe in, out;
  if (options.input) {
    absl::StatusOr<Pipe> made = MakePipe();
    if (!made.ok()) return made.status();
    in = std::move(*made);
    posix_spawn_file_actions_adddup2(&setup.actions, in.read.get(), STDIN_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  if (capturing) {
    absl::StatusOr<Pipe> made = MakePipe();
    if (!made.ok()) return made.status();
    out = std::move(*made);
  }
  setup.Route(STDOUT_FILENO, options.stdout_to, out.write);
  setup.Route(STDERR_FILENO, options.stderr_to, out.write);

  std::vector<std::string> argv_strings = options.argv;
  std::vector<std::string> env_strings = Environment(options.env);
  std::vector<char*> argv = Pointers(argv_strings), envp = Pointers(env_strings);
  pid_t pid = 0;
  int rc = program.find('/') == std::string::npos
               ? posix_spawnp(&pid, program.c_str(), &setup.actions, &setup.attributes, argv.data(),
                              envp.data())
               : posix_spawn(&pid, program.c_str(), &setup.actions, &setup.attributes, argv.data(),
                             envp.data());
  // The child holds its own copies now; ours would keep the output open after it exits.
  in.read.Reset();
  out.write.Reset();
  if (rc != 0) return absl::FailedPreconditionError(std::strerror(rc));

  const steady_clock::time_point deadline = steady_clock::now() + options.timeout;
  if (options.input) {
    // A few bytes: the pipe's buffer takes them at once. A program that exits without reading
    // them must not end this process with SIGPIPE; its exit status says what happened.
    SigpipeBlock quiet;
    if (!options.input->empty() &&
        write(in.write.get(), options.input->data(), options.input->size()) < 0) {
    }
    in.write.Reset();
  }

  SpawnResult result;
  bool killed = false;
  while (out.read.valid()) {
    milliseconds left = Left(deadline);
    if (left.count() == 0) {
      result.end = SpawnResult::End::kTimedOut;
      killed = true;
      break;
    }
    pollfd fd{out.read.get(), POLLIN, 0};
    int ready = poll(&fd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buffer[4096];
    ssize_t n = read(out.read.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.output.append(buffer, static_cast<size_t>(n));
    if (result.output.size() > options.max_output) {
      result.end = SpawnResult::End::kOutputTooLong;
      killed = true;
      break;
    }
  }
  out.read.Reset();
  // Its output is done, but it may still run (`nvidia-cuda-mps-control -d` waits until its daemon
  // listens): the same deadline bounds the wait for its end.
  int status = 0;
  while (!killed) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    milliseconds left = Left(deadline);
    if (left.count() == 0) {
      result.end = SpawnResult::End::kTimedOut;
      killed = true;
      break;
    }
    std::this_thread::sleep_for(std::min(left, milliseconds(10)));
  }
  if (killed) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return result;
  }
  if (WIFSIGNALED(status)) {
    result.end = SpawnResult::End::kSignalled;
    result.signal = WTERMSIG(status);
  } else {
    result.end = SpawnResult::End::kExited;
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

}  // namespace gpunode::core
