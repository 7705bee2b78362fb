#include "labels/label_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/file_io.h"
#include "core/unique_fd.h"

namespace gpunode::labels {
namespace {

absl::Status WriteError(const std::string& path, std::string_view what, int err) {
  return absl::InvalidArgumentError(
      absl::StrCat("--output ", path, ": ", std::string(what), ": ", std::strerror(err),
                   "; create the directory and make it writable, or choose another --output"));
}

}  // namespace

std::string FormatLabels(const Labels& labels) {
  std::string out;
  for (const auto& [key, value] : labels) absl::StrAppend(&out, key, "=", value, "\n");
  return out;
}

absl::Status WriteLabelFile(const std::string& path, const std::string& contents) {
  namespace fs = std::filesystem;
  if (absl::Status replaceable = core::CheckReplaceable(path); !replaceable.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--output ", replaceable.message()));
  }
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::path tmp_dir = dir / absl::StrCat(".", target.filename().string(), ".tmp.", ::getpid());
  if (::mkdir(tmp_dir.c_str(), 0755) != 0 && errno != EEXIST)
    return WriteError(path, "cannot create a temporary directory beside it", errno);
  fs::path tmp = tmp_dir / target.filename();
  absl::Status status;
  core::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    status = WriteError(path, "cannot create", errno);
  } else {
    size_t done = 0;
    while (status.ok() && done < contents.size()) {
      ssize_t n = ::write(fd.get(), contents.data() + done, contents.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        status = WriteError(path, "cannot write", errno);
      else
        done += static_cast<size_t>(n);
    }
    if (status.ok() && ::fchmod(fd.get(), 0644) != 0) {
      status = WriteError(path, "cannot chmod", errno);
    }
    if (status.ok() && ::fsync(fd.get()) != 0) status = WriteError(path, "cannot fsync", errno);
    fd.Reset();
    if (status.ok() && ::rename(tmp.c_str(), target.c_str()) != 0)
      status = WriteError(path, "cannot rename into place", errno);
  }
  ::unlink(tmp.c_str());
  ::rmdir(tmp_dir.c_str());
  return status;
}

}  // namespace gpunode::labels
