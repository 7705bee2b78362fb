#include "spec_loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "builtin_profiles.h"
#include "capture_loader.h"
#include "file_descriptor.h"
#include "messages.h"
#include "profile_loader.h"
#include "text_values.h"
#include "topology_builder.h"
#include "topology_matrix.h"

namespace gpunode::sim {
namespace {

constexpr off_t kMaxInputBytes = 64 << 20;

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string spec_hint() {
  return str_cat("give a built-in profile (", builtin_profile_names(", "),
                 "), a profile YAML or an nvidia-smi -q -x capture");
}

}  // namespace

LoadResult<std::string> read_input_file(const std::string& path, std::string_view hint) {
  auto fail = [&](std::string_view what) {
    return LoadResult<std::string>::failure(str_cat(path, ": ", what, "; ", hint));
  };
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway.
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) {
    if (errno == ENOENT) return fail("no such file");
    return fail(str_cat("cannot open: ", std::strerror(errno)));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return fail(str_cat("cannot stat: ", std::strerror(errno)));
  if (S_ISDIR(info.st_mode)) return fail("is a directory, not a file");
  if (!S_ISREG(info.st_mode)) return fail("is not a regular file");
  if (info.st_size > kMaxInputBytes) return fail("is larger than 64 MiB");
  std::string text(static_cast<size_t>(info.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(str_cat("cannot read: ", std::strerror(errno)));
    if (n == 0) break;  // the file shrank while we read it
    done += static_cast<size_t>(n);
  }
  text.resize(done);
  if (trim(text).empty()) return fail("is empty");
  return text;
}

LoadResult<NodeModel> load_spec(std::string_view spec, std::string_view topology_file) {
  using Result = LoadResult<NodeModel>;
  if (trim(spec).empty()) return Result::failure(str_cat("no simulator spec given; ", spec_hint()));
  std::optional<LoadResult<NodeModel>> loaded;
  if (auto builtin = find_builtin_profile(spec)) {
    loaded = load_profile(*builtin, str_cat("built-in profile ", spec));
  } else {
    std::string path(spec);
    bool looks_like_path = path.find('/') != std::string::npos || ends_with(path, ".yaml") ||
                           ends_with(path, ".yml") || ends_with(path, ".xml");
    struct stat info {};
    if (!looks_like_path && ::stat(path.c_str(), &info) != 0) {
      return Result::failure(str_cat("unknown built-in profile ", quote(spec),
                                     "; known: ", builtin_profile_names(", ")));
    }
    auto text = read_input_file(path, spec_hint());
    if (!text.ok()) return Result::failure(text.error());
    std::string_view content = trim(text.value());
    if (ends_with(path, ".xml") || content.front() == '<') {
      loaded = load_capture(text.value(), path);
    } else {
      loaded = load_profile(text.value(), path);
    }
  }
  if (!loaded->ok() || trim(topology_file).empty()) return std::move(*loaded);

  NodeModel node = std::move(loaded->value());
  std::string topology_path(topology_file);
  auto text = read_input_file(topology_path, "give the output of nvidia-smi topo -m");
  if (!text.ok()) return Result::failure(text.error());
  auto matrix = parse_topology(text.value(), {topology_path, 0});
  if (!matrix.ok()) return Result::failure(matrix.error());
  if (auto problem = apply_topology(matrix.value(), std::nullopt, topology_path, node)) {
    return Result::failure(*problem);
  }
  return node;
}

}  // namespace gpunode::sim
