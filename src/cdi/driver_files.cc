#include "cdi/driver_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cdi/ld_so_cache.h"
#include "cdi/library_links.h"

namespace gpunode::cdi {
namespace {

// internal/lookup/library.go: the directories searched besides the ldcache.
constexpr const char* kLibraryDirectories[] = {
    "/usr/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu/nvidia/current",
    "/usr/lib/aarch64-linux-gnu/nvidia/current",
    "/lib64",
    "/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/lib/x86_64-linux-gnu/nvidia/current",
    "/lib/aarch64-linux-gnu/nvidia/current",
};

// internal/lookup/path.go: the default executable search path.
constexpr const char* kBinaryDirectories[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                              "/usr/bin",        "/sbin",          "/bin"};

// pkg/nvcdi/driver-nvml.go, newDriverBinariesDiscoverer.
constexpr const char* kBinaries[] = {
    "nvidia-smi",               // system management interface
    "nvidia-debugdump",         // GPU core dumps
    "nvidia-persistenced",      // persistence mode
    "nvidia-cuda-mps-control",  // multi-process service CLI
    "nvidia-cuda-mps-server",   // multi-process service server
    "nvidia-imex",              // IMEX daemon
    "nvidia-imex-ctl",          // IMEX control
};

// internal/discover/ipc.go.
constexpr const char* kSockets[] = {"/var/run/nvidia-persistenced/socket",
                                    "/var/run/nvidia-fabricmanager/socket"};
constexpr const char* kMpsPipeDirectory = "/tmp/nvidia-mps";

// pkg/nvcdi/common-nvml.go, the meta devices.
constexpr const char* kControlDevices[] = {"/dev/nvidiactl", "/dev/nvidia-uvm",
                                           "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"};

std::string Join(absl::string_view dir, absl::string_view name) {
  if (absl::EndsWith(dir, "/")) return absl::StrCat(dir, name);
  return absl::StrCat(dir, "/", name);
}

std::string Parent(absl::string_view path) {
  size_t slash = path.rfind('/');
  return slash == 0 || slash == absl::string_view::npos ? "/" : std::string(path.substr(0, slash));
}

std::string Base(absl::string_view path) {
  size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

// The resolved file, or nullopt when it is missing or is not of the wanted kind.
std::optional<std::string> Resolved(const core::HostRoot& root, const std::string& path,
                                    mode_t kind) {
  absl::StatusOr<std::string> resolved = ResolveInRoot(root, path);
  if (!resolved.ok()) return std::nullopt;
  absl::StatusOr<struct stat> st = root.Stat(*resolved);
  if (!st.ok()) return std::nullopt;
  if (kind != 0 && (st->st_mode & S_IFMT) != kind) return std::nullopt;
  return *resolved;
}

DriverFile File(const DiscoveryOptions& options, std::string container_path,
                const std::string& resolved) {
  return {std::move(container_path), UnderRoot(options.driver_root, resolved)};
}

// The libraries: real files named "*.so.<version>", from the ldcache and the usual directories.
std::vector<DriverFile> FindLibraries(const core::HostRoot& driver, const std::string& version,
                                      const DiscoveryOptions& options,
                                      std::vector<std::string>* missing) {
  std::string suffix = absl::StrCat(".so.", version);
  std::set<std::string> found;  // resolved paths inside the driver root
  auto consider = [&](const std::string& path) {
    std::optional<std::string> file = Resolved(driver, path, S_IFREG);
    // pkg/nvcdi/driver-nvml.go also mounts the legacy NVVM of CUDA 11 drivers, whatever its
    // version suffix.
    if (file && absl::StartsWith(Base(*file), "lib") &&
        (absl::EndsWith(Base(*file), suffix) ||
         absl::StartsWith(Base(*file), "libnvidia-nvvm70.so."))) {
      found.insert(*file);
    }
  };
  absl::StatusOr<std::string> bytes = driver.ReadFile("/etc/ld.so.cache");
  if (!bytes.ok()) {
    missing->push_back(absl::StrCat("ld.so.cache: ", bytes.status().message()));
  } else {
    absl::StatusOr<std::vector<LdCacheEntry>> entries =
        ParseLdSoCache(*bytes, driver.Resolve("/etc/ld.so.cache"));
    if (!entries.ok()) {
      missing->push_back(std::string(entries.status().message()));
    } else {
      for (const LdCacheEntry& entry : *entries) {
        if (entry.Is64BitElf() && absl::StartsWith(entry.path, "/")) consider(entry.path);
      }
    }
  }
  for (const char* dir : kLibraryDirectories) {
    absl::StatusOr<std::vector<std::string>> names = driver.ListDir(dir);
    if (!names.ok()) continue;
    for (const std::string& name : *names) {
      if (absl::EndsWith(name, suffix) || absl::StartsWith(name, "libnvidia-nvvm70.so.")) {
        consider(Join(dir, name));
      }
    }
  }
  std::vector<DriverFile> libraries;
  for (const std::string& file : found) libraries.push_back(File(options, file, file));
  return libraries;
}

std::vector<DriverFile> FindBinaries(const core::HostRoot& driver, const DiscoveryOptions& options,
                                     std::vector<std::string>* missing) {
  std::vector<DriverFile> binaries;
  for (const char* name : kBinaries) {
    bool located = false;
    for (const char* dir : kBinaryDirectories) {
      std::string path = Join(dir, name);
      if (IsExecutableFile(driver, path)) {
        binaries.push_back(File(options, path, *ResolveInRoot(driver, path)));
        located = true;
        break;
      }
    }
    if (!located) missing->push_back(absl::StrCat(name, ": not on the search path"));
  }
  return binaries;
}

// pkg/nvcdi/driver-nvml.go, getFirmwareSearchPaths: the kernel's custom path first, then
// /lib/firmware/updates/<release>, /lib/firmware/updates, /lib/firmware/<release>, /lib/firmware.
std::vector<DriverFile> FindFirmware(const core::HostRoot& driver, const core::HostRoot& host,
                                     const std::string& version, const DiscoveryOptions& options,
                                     std::vector<std::string>* missing) {
  std::vector<std::string> directories;
  absl::StatusOr<std::string> custom =
      host.ReadAttribute("/sys/module/firmware_class/parameters/path");
  if (custom.ok() && absl::StartsWith(*custom, "/")) directories.push_back(*custom);
  // The host's running kernel, read through the host root (a container shares the kernel, and
  // tests give their own): what uname(2) says, without bypassing --host-root.
  absl::StatusOr<std::string> osrelease = host.ReadAttribute("/proc/sys/kernel/osrelease");
  std::string release = osrelease.ok() ? *osrelease : "";
  if (!release.empty()) directories.push_back(Join("/lib/firmware/updates", release));
  directories.push_back("/lib/firmware/updates");
  if (!release.empty()) directories.push_back(Join("/lib/firmware", release));
  directories.push_back("/lib/firmware");
  for (const std::string& dir : directories) {
    std::string version_dir = Join(Join(dir, "nvidia"), version);
    absl::StatusOr<std::vector<std::string>> names = driver.ListDir(version_dir);
    if (!names.ok()) continue;
    std::vector<DriverFile> firmware;
    for (const std::string& name : *names) {
      if (!absl::StartsWith(name, "gsp") || !absl::EndsWith(name, ".bin")) continue;
      std::string path = Join(version_dir, name);
      if (std::optional<std::string> file = Resolved(driver, path, S_IFREG)) {
        firmware.push_back(File(options, path, *file));
      }
    }
    if (!firmware.empty()) return firmware;
  }
  missing->push_back(absl::StrCat("GSP firmware: no nvidia/", version, "/gsp*.bin in ",
                                  absl::StrJoin(directories, ", ")));
  return {};
}

std::vector<DriverFile> FindIpc(const core::HostRoot& driver, const DiscoveryOptions& options,
                                std::vector<std::string>* missing) {
  std::vector<DriverFile> ipc;
  for (const char* socket : kSockets) {
    // /var/run is a link to /run on every current distribution; a driver root may lack the link.
    std::string run_path = absl::StrCat("/run", absl::StripPrefix(socket, "/var/run"));
    std::optional<std::string> file = Resolved(driver, socket, S_IFSOCK);
    if (!file) file = Resolved(driver, run_path, S_IFSOCK);
    if (file) {
      ipc.push_back(File(options, socket, *file));
    } else {
      missing->push_back(absl::StrCat(socket, ": no socket (the daemon is not running)"));
    }
  }
  if (std::optional<std::string> dir = Resolved(driver, kMpsPipeDirectory, S_IFDIR)) {
    ipc.push_back(File(options, kMpsPipeDirectory, *dir));
  } else {
    missing->push_back(absl::StrCat(kMpsPipeDirectory, ": no MPS pipe directory"));
  }
  return ipc;
}

}  // namespace

std::string UnderRoot(const std::string& root, const std::string& path) {
  absl::string_view trimmed = root;
  while (absl::ConsumeSuffix(&trimmed, "/")) {
  }
  return absl::StrCat(trimmed, path);
}

bool IsExecutableFile(const core::HostRoot& host, const std::string& path) {
  std::optional<std::string> file = Resolved(host, path, S_IFREG);
  if (!file) return false;
  absl::StatusOr<struct stat> st = host.Stat(*file);
  return st.ok() && (st->st_mode & 0111) != 0;
}

absl::StatusOr<std::string> ResolveInRoot(const core::HostRoot& root, const std::string& path) {
  std::vector<std::string> pending = absl::StrSplit(path, '/', absl::SkipEmpty());
  std::reverse(pending.begin(), pending.end());
  std::string current;  // resolved so far, "" for "/"
  int links = 0;
  while (!pending.empty()) {
    std::string part = std::move(pending.back());
    pending.pop_back();
    if (part == ".") continue;
    if (part == "..") {
      current = current.empty() ? "" : Parent(current);
      if (current == "/") current.clear();
      continue;
    }
    std::string next = absl::StrCat(current, "/", part);
    absl::StatusOr<struct stat> st = root.Stat(next);
    if (!st.ok()) return st.status();
    if (!S_ISLNK(st->st_mode)) {
      current = std::move(next);
      continue;
    }
    if (++links > 40) return absl::FailedPreconditionError(absl::StrCat(path, ": too many links"));
    absl::StatusOr<std::string> target = root.ReadLink(next);
    if (!target.ok()) return target.status();
    if (absl::StartsWith(*target, "/")) current.clear();
    std::vector<std::string> parts = absl::StrSplit(*target, '/', absl::SkipEmpty());
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) pending.push_back(*it);
  }
  return current.empty() ? "/" : current;
}

absl::StatusOr<DriverFiles> DiscoverDriverFiles(const std::string& version,
                                                const core::HostRoot& host,
                                                const DiscoveryOptions& options) {
  if (version.empty()) {
    return absl::FailedPreconditionError("NVML reported no driver version");
  }
  core::HostRoot driver(options.driver_root);
  DriverFiles files;
  files.version = version;
  files.libraries = FindLibraries(driver, version, options, &files.missing);
  for (const char* required : {"libcuda.so.", "libnvidia-ml.so."}) {
    std::string name = absl::StrCat(required, version);
    bool present = std::any_of(files.libraries.begin(), files.libraries.end(),
                               [&](const DriverFile& f) { return Base(f.container_path) == name; });
    if (!present) {
      return absl::FailedPreconditionError(
          absl::StrCat("no driver: ", name, " is neither in ", driver.Resolve("/etc/ld.so.cache"),
                       " nor in the library directories under ", options.driver_root,
                       "; install the NVIDIA driver's user space or set --driver-root"));
    }
  }
  files.library_links = LibraryLinks(driver, files.libraries, &files.missing);
  files.binaries = FindBinaries(driver, options, &files.missing);
  files.firmware = FindFirmware(driver, host, version, options, &files.missing);
  files.ipc = FindIpc(driver, options, &files.missing);
  for (const char* device : kControlDevices) {
    if (host.Exists(UnderRoot(options.dev_root, device))) {
      files.control_devices.push_back(device);
    } else {
      files.missing.push_back(absl::StrCat(device, ": not present"));
    }
  }
  return files;
}

}  // namespace gpunode::cdi
