// A shared library loaded with dlopen and owned by one object: dlclosed when it goes, moved and
// never copied, so that every handle has an owner whose lifetime says how long the library's code
// and data stay mapped.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace gpunode::core {

class LoadedLibrary {
 public:
  // Loads `path` with dlopen's `flags`. The error is FailedPrecondition with the dynamic linker's
  // reason, which names the path (prefixed with it where the linker's text does not already).
  static absl::StatusOr<LoadedLibrary> Open(const std::string& path, int flags);

  LoadedLibrary() = default;
  ~LoadedLibrary();
  LoadedLibrary(LoadedLibrary&& other) noexcept;
  LoadedLibrary& operator=(LoadedLibrary&& other) noexcept;
  LoadedLibrary(const LoadedLibrary&) = delete;
  LoadedLibrary& operator=(const LoadedLibrary&) = delete;

  // The address of `name` (dlsym: the library and its dependencies), or null if neither exports
  // it.
  void* Address(const char* name) const;
  // The same address as `Pointer`, a function or object pointer type.
  template <typename Pointer>
  Pointer Symbol(const char* name) const {
    return reinterpret_cast<Pointer>(Address(name));
  }

 private:
  explicit LoadedLibrary(void* handle) : handle_(handle) {}

  void* handle_ = nullptr;
};

}  // namespace gpunode::core
