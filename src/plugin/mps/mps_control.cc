#include "plugin/mps/mps_control.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/spawn.h"

namespace gpunode::plugin {
namespace {

constexpr const char* kProgram = "nvidia-cuda-mps-control";

bool Executable(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
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
  core::SpawnOptions spawn{.argv = args, .env = extra_env, .input = input};
  spawn.env.push_back(absl::StrCat("CUDA_MPS_PIPE_DIRECTORY=", paths_.PipeDir()));
  spawn.env.push_back(absl::StrCat("CUDA_MPS_LOG_DIRECTORY=", paths_.LogDir()));
  // A command's answer comes on stdout, its complaints on stderr; the daemon `-d` starts keeps
  // its launcher's descriptors for its life, so that one gets none to hold.
  using Stream = core::SpawnOptions::Stream;
  spawn.stdout_to = input ? Stream::kCapture : Stream::kDiscard;
  spawn.stderr_to = input ? Stream::kCapture : Stream::kDiscard;
  spawn.timeout = timeout;
  absl::StatusOr<core::SpawnResult> result = env_.Spawn(spawn);
  if (!result.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": ", result.status().message()));
  }
  if (result->end == core::SpawnResult::End::kTimedOut) {
    return absl::DeadlineExceededError(
        absl::StrCat(what, ": no answer within ", timeout.count(), " ms"));
  }
  std::string said(absl::StripAsciiWhitespace(result->output));
  if (!result->Succeeded()) {
    return absl::UnavailableError(absl::StrCat(what, ": ", said.empty() ? "failed" : said));
  }
  // The program exits 0 on a command the daemon does not know, and says so.
  if (absl::StartsWith(said, "Unknown command") || absl::StrContains(said, "Cannot find")) {
    return absl::UnavailableError(absl::StrCat(what, ": ", said));
  }
  return std::move(result->output);
}

}  // namespace gpunode::plugin
