#include "core/loaded_library.h"

#include <dlfcn.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gpunode::core {

absl::StatusOr<LoadedLibrary> LoadedLibrary::Open(const std::string& path, int flags) {
  dlerror();
  void* handle = dlopen(path.c_str(), flags);
  if (handle == nullptr) {
    const char* error = dlerror();
    std::string reason = error != nullptr ? error : "unknown dlopen error";
    // dlerror usually names the file itself ("PATH: invalid ELF header").
    return absl::FailedPreconditionError(
        absl::StrContains(reason, path) ? reason : absl::StrCat(path, ": ", reason));
  }
  return LoadedLibrary(handle);
}

LoadedLibrary::~LoadedLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

LoadedLibrary::LoadedLibrary(LoadedLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)) {}

LoadedLibrary& LoadedLibrary::operator=(LoadedLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void* LoadedLibrary::Address(const char* name) const {
  return handle_ != nullptr ? dlsym(handle_, name) : nullptr;
}

}  // namespace gpunode::core
