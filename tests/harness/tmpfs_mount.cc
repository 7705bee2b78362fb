#include "tmpfs_mount.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpunode::testing {

TmpfsMount::TmpfsMount(const std::filesystem::path& dir, uint64_t size_bytes) : dir_(dir) {
  std::error_code ignored;
  std::filesystem::create_directories(dir_, ignored);
  std::string options = "size=" + std::to_string(size_bytes) + ",mode=0755";
  if (::mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0) {
    mounted_ = true;
  } else {
    error_ = "mount tmpfs on " + dir_.string() + ": " + std::strerror(errno);
  }
}

TmpfsMount::~TmpfsMount() {
  // Detached, so a process still holding a file there does not keep the test from cleaning up.
  if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
}

bool TmpfsMount::Fill(const std::string& name, uint64_t bytes) const {
  int fd = ::open((dir_ / name).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace gpunode::testing
