#include "nvml/library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <initializer_list>
#include <type_traits>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/log.h"
#include "spdlog/spdlog.h"

namespace gpunode::nvml {
namespace {

// A fallback symbol must be callable exactly like the name it stands in for.
#define GPUNODE_NVML_CHECK_FALLBACK(member, preferred, ...)                                  \
  __VA_OPT__(static_assert(std::is_same_v<decltype(&::preferred), decltype(&::__VA_ARGS__)>, \
                           #__VA_ARGS__ " must have the signature of " #preferred);)
GPUNODE_NVML_ENTRY_POINTS(GPUNODE_NVML_CHECK_FALLBACK)
#undef GPUNODE_NVML_CHECK_FALLBACK

constexpr const char* kLibraryName = "libnvidia-ml.so.1";

// Where distributions and the NVIDIA driver containers put the library.
constexpr const char* kLibraryDirs[] = {
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    // Debian's packages of the driver (libnvidia-ml1), reached through nvidia-alternative's
    // loader configuration on the host but not when gpunode looks under a --driver-root.
    "/usr/lib/x86_64-linux-gnu/nvidia/current",
    "/usr/lib/aarch64-linux-gnu/nvidia/current",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/run/nvidia/driver/usr/lib64",
};

std::string JoinRoot(const std::string& root, const char* dir) {
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return r == "/" ? absl::StrCat(dir, "/", kLibraryName) : absl::StrCat(r, dir, "/", kLibraryName);
}

absl::StatusOr<core::LoadedLibrary> TryOpen(const std::string& path) {
  return core::LoadedLibrary::Open(path, RTLD_NOW | RTLD_LOCAL);
}

// nvmlInit's failures that have one usual cause on a node, said with the way to confirm it.
absl::Status WithInitHint(const absl::Status& status, const std::string& path) {
  absl::string_view hint;
  switch (ReturnOf(status)) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
      hint =
          "the NVIDIA kernel module is not loaded (lsmod | grep nvidia; gpunode doctor says why)";
      break;
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      hint =
          "the library and the loaded kernel module are of different driver versions: reboot "
          "after a driver upgrade, or reinstall one driver";
      break;
    case NVML_ERROR_NO_PERMISSION:
      hint = "cannot open /dev/nvidiactl: run as root or with access to the NVIDIA device nodes";
      break;
    default:
      return status;
  }
  absl::Status out(status.code(), absl::StrCat(status.message(), " from ", path, ": ", hint));
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Library>> Library::Open(const LibraryOptions& options) {
  absl::StatusOr<core::LoadedLibrary> loaded =
      absl::NotFoundError("no NVML library looked for yet");
  std::string path;
  if (!options.library_path.empty()) {
    path = options.library_path;
    loaded = TryOpen(path);
    if (!loaded.ok()) {
      return absl::NotFoundError(
          absl::StrCat("cannot load NVML library ", path, ": ", loaded.status().message()));
    }
  } else {
    std::vector<std::string> tried;
    for (const char* dir : kLibraryDirs) {
      path = JoinRoot(options.driver_root, dir);
      if (::access(path.c_str(), F_OK) != 0) continue;
      loaded = TryOpen(path);
      if (loaded.ok()) break;
      // The error names the file ("PATH: invalid ELF header").
      tried.emplace_back(loaded.status().message());
    }
    if (!loaded.ok() && (options.driver_root.empty() || options.driver_root == "/")) {
      path = kLibraryName;  // the dynamic linker's cache and LD_LIBRARY_PATH
      loaded = TryOpen(path);
      // Any other answer means the linker found a file by that name and could not load it.
      if (!loaded.ok() &&
          !absl::StrContains(loaded.status().message(), "No such file or directory")) {
        tried.emplace_back(loaded.status().message());
      }
    }
    if (!loaded.ok()) {
      // A file that is there but does not load (truncated, not an ELF, another architecture) is
      // not a missing driver: say what the dynamic linker said.
      if (!tried.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "NVIDIA driver library ", kLibraryName,
            " found but cannot be loaded: ", absl::StrJoin(tried, "; "),
            "; reinstall the driver (the file is damaged or for another architecture)"));
      }
      return absl::NotFoundError(absl::StrCat(
          "NVIDIA driver library ", kLibraryName, " not found under ",
          options.driver_root.empty() ? "/" : options.driver_root, ": is the driver installed?"));
    }
  }
  std::unique_ptr<Library> library(new Library(*std::move(loaded), path));
  library->ResolveEntryPoints();
  if (absl::Status st = GPUNODE_NVML_CALL(*library, init); !st.ok()) {
    return WithInitHint(st, path);
  }
  library->initialized_ = true;
  spdlog::debug("NVML loaded from {}", path);
  return library;
}

Library::~Library() {
  if (initialized_ && entry_points_.shutdown != nullptr) entry_points_.shutdown();
}

void Library::ResolveEntryPoints() {
  auto resolve = [this](std::initializer_list<const char*> names, const char** symbol) -> void* {
    for (const char* name : names) {
      if (void* fn = library_.Address(name)) {
        *symbol = name;
        return fn;
      }
    }
    spdlog::debug("NVML symbol {} not exported by {}", *names.begin(), path_);
    return nullptr;
  };
#define GPUNODE_NVML_RESOLVE(member, preferred, ...)                       \
  entry_points_.member = reinterpret_cast<decltype(entry_points_.member)>( \
      resolve({#preferred __VA_OPT__(, #__VA_ARGS__)}, &entry_points_.member##_symbol));
  GPUNODE_NVML_ENTRY_POINTS(GPUNODE_NVML_RESOLVE)
#undef GPUNODE_NVML_RESOLVE
}

std::string Library::ErrorString(nvmlReturn_t ret) const {
  if (entry_points_.error_string == nullptr) return "";
  const char* text = entry_points_.error_string(ret);
  return text ? text : "";
}

}  // namespace gpunode::nvml
