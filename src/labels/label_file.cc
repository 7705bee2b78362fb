#include "labels/label_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

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
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::path tmp_dir = dir / absl::StrCat(".", target.filename().string(), ".tmp.", ::getpid());
  if (::mkdir(tmp_dir.c_str(), 0755) != 0 && errno != EEXIST)
    return WriteError(path, "cannot create a temporary directory beside it", errno);
  fs::path tmp = tmp_dir / target.filename();
  absl::Status status;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    status = WriteError(path, "cannot create", errno);
  } else {
    size_t done = 0;
    while (status.ok() && done < contents.size()) {
      ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        status = WriteError(path, "cannot write", errno);
      else
        done += static_cast<size_t>(n);
    }
    if (status.ok() && ::fchmod(fd, 0644) != 0) status = WriteError(path, "cannot chmod", errno);
    if (status.ok() && ::fsync(fd) != 0) status = WriteError(path, "cannot fsync", errno);
    ::close(fd);
    if (status.ok() && ::rename(tmp.c_str(), target.c_str()) != 0)
      status = WriteError(path, "cannot rename into place", errno);
  }
  ::unlink(tmp.c_str());
  ::rmdir(tmp_dir.c_str());
  return status;
}

}  // namespace gpunode::labels
