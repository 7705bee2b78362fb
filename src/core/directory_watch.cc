#include "core/directory_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace gpunode::core {

absl::StatusOr<DirectoryWatch> DirectoryWatch::Open(const std::string& directory) {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return absl::InternalError(absl::StrCat("inotify_init1: ", std::strerror(errno)));
  DirectoryWatch watch(fd);
  if (inotify_add_watch(fd, directory.c_str(),
                        IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE |
                            IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR) < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot watch ", directory, ": ", std::strerror(errno)));
  }
  return watch;
}

DirectoryWatch::DirectoryWatch(DirectoryWatch&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

DirectoryWatch& DirectoryWatch::operator=(DirectoryWatch&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

DirectoryWatch::~DirectoryWatch() {
  if (fd_ >= 0) close(fd_);
}

std::vector<DirectoryEvent> DirectoryWatch::Read() {
  std::vector<DirectoryEvent> events;
  alignas(struct inotify_event) char buffer[4096];
  while (true) {
    ssize_t n = read(fd_, buffer, sizeof buffer);
    if (n <= 0) break;
    for (char* p = buffer; p < buffer + n;) {
      auto* event = reinterpret_cast<struct inotify_event*>(p);
      DirectoryEvent out;
      if (event->len > 0) out.name = event->name;
      out.created = (event->mask & (IN_CREATE | IN_MOVED_TO)) != 0;
      out.deleted = (event->mask & (IN_DELETE | IN_MOVED_FROM)) != 0;
      out.directory_gone = (event->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) != 0;
      out.overflow = (event->mask & IN_Q_OVERFLOW) != 0;
      events.push_back(std::move(out));
      p += sizeof(struct inotify_event) + event->len;
    }
  }
  return events;
}

}  // namespace gpunode::core
