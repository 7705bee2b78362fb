#include "cdi/library_links.h"

#include <sys/stat.h>

#include <set>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cdi/elf_soname.h"

namespace gpunode::cdi {
namespace {

std::string LinkDirectory(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string LinkFileName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// getSoLink: the name with its version suffixes taken off down to ".so" ("libcuda.so.1" ->
// "libcuda.so"); empty for a name without ".so".
std::string WithoutVersion(std::string name) {
  while (true) {
    size_t dot = name.rfind('.');
    if (dot == std::string::npos) return "";
    if (name.compare(dot, std::string::npos, ".so") == 0) return name;
    name.erase(dot);
  }
}

// linkExistsInDir: only a symbolic link counts, wherever it points.
bool IsLink(const core::HostRoot& driver, const std::string& path) {
  absl::StatusOr<struct stat> st = driver.Stat(path);
  return st.ok() && S_ISLNK(st->st_mode);
}

// getLinksForMount: the links no driver package makes.
std::vector<std::string> FixedLinks(const std::string& dir, const std::string& name) {
  if (absl::StartsWith(name, "libcuda.so.")) {
    return {absl::StrCat("libcuda.so.1::", dir, "/libcuda.so")};
  }
  if (absl::StartsWith(name, "libGLX_nvidia.so.")) {
    return {absl::StrCat(name, "::", dir, "/libGLX_indirect.so.0")};
  }
  if (absl::StartsWith(name, "libnvidia-opticalflow.so.")) {
    return {absl::StrCat("libnvidia-opticalflow.so.1::", dir, "/libnvidia-opticalflow.so")};
  }
  return {};
}

}  // namespace

std::vector<std::string> LibraryLinks(const core::HostRoot& driver,
                                      const std::vector<DriverFile>& libraries,
                                      std::vector<std::string>* missing) {
  std::vector<std::string> links;
  std::set<std::string> seen;
  auto add = [&](std::string link) {
    if (seen.insert(link).second) links.push_back(std::move(link));
  };
  for (const DriverFile& library : libraries) {
    const std::string dir = LinkDirectory(library.container_path);
    const std::string name = LinkFileName(library.container_path);
    for (std::string& link : FixedLinks(dir, name)) add(std::move(link));
    absl::StatusOr<std::string> soname = ReadSoname(driver, library.container_path);
    if (!soname.ok()) {
      missing->push_back(absl::StrCat(name, ": no SONAME links: ", soname.status().message()));
      continue;
    }
    if (*soname != name && IsLink(driver, absl::StrCat(dir, "/", *soname))) {
      add(absl::StrCat(name, "::", dir, "/", *soname));
    }
    std::string unversioned = WithoutVersion(*soname);
    if (!unversioned.empty() && unversioned != *soname &&
        IsLink(driver, absl::StrCat(dir, "/", unversioned))) {
      add(absl::StrCat(*soname, "::", dir, "/", unversioned));
    }
  }
  return links;
}

}  // namespace gpunode::cdi
