// The loaded NVML library: dlopen at run time (never linked), one table of entry points,
// initialized for the lifetime of the object.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/loaded_library.h"
#include "nvml/abi.h"
#include "nvml/entry_points.h"
#include "nvml/status.h"

namespace gpunode::nvml {

// One function pointer per entry of GPUNODE_NVML_ENTRY_POINTS, plus the symbol name it was
// resolved from (or the preferred name when none was found), for error messages.
struct EntryPoints {
#define GPUNODE_NVML_MEMBER(member, preferred, ...) \
  decltype(&::preferred) member = nullptr;          \
  const char* member##_symbol = #preferred;
  GPUNODE_NVML_ENTRY_POINTS(GPUNODE_NVML_MEMBER)
#undef GPUNODE_NVML_MEMBER
};

struct LibraryOptions {
  // The driver's root filesystem; libnvidia-ml.so.1 is searched in the usual library
  // directories below it. "/" also consults the dynamic linker's cache.
  std::string driver_root = "/";
  // An explicit library file; overrides driver_root.
  std::string library_path;
};

// Thread-safety: after Open the object is immutable and NVML is itself thread-safe (NVIDIA's
// documentation: simultaneous calls from several threads are allowed), so every const method may
// be called from any thread. It must outlive every Device, EventSet and System made from it.
class Library {
 public:
  // Finds, loads and initializes NVML. A missing library is one clear NotFound error; one that is
  // there but does not load is FailedPrecondition (NotFound for --nvml-library) with dlopen's
  // reason.
  static absl::StatusOr<std::unique_ptr<Library>> Open(const LibraryOptions& options);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const std::string& path() const { return path_; }
  const EntryPoints& entry_points() const { return entry_points_; }

  // Calls `fn` and turns its return code into a Status naming `symbol`. A null `fn` (the
  // symbol is not exported by this driver) is NVML_ERROR_FUNCTION_NOT_FOUND.
  template <typename Fn, typename... Args>
  absl::Status Invoke(Fn fn, const char* symbol, Args... args) const {
    if (fn == nullptr)
      return FromReturn(NVML_ERROR_FUNCTION_NOT_FOUND, symbol, "not exported by " + path_);
    nvmlReturn_t ret = fn(args...);
    return ret == NVML_SUCCESS ? absl::OkStatus() : FromReturn(ret, symbol, ErrorString(ret));
  }

  // The driver's own text for a return code ("" when nvmlErrorString is missing).
  std::string ErrorString(nvmlReturn_t ret) const;

 private:
  Library(core::LoadedLibrary library, std::string path)
      : library_(std::move(library)), path_(std::move(path)) {}
  void ResolveEntryPoints();

  core::LoadedLibrary library_;  // unloaded after the destructor's nvmlShutdown
  std::string path_;
  EntryPoints entry_points_;
  bool initialized_ = false;
};

// How a command opens NVML for a role: the driver's library under `driver_root`, or the simulator
// in its place. A role that opens it again (after a failure) or under a root its config names
// takes one.
using Opener =
    std::function<absl::StatusOr<std::unique_ptr<Library>>(const std::string& driver_root)>;

// Calls entry point `member` of Library `lib` with the given arguments.
#define GPUNODE_NVML_CALL(lib, member, ...) \
  (lib).Invoke((lib).entry_points().member, \
               (lib).entry_points().member##_symbol __VA_OPT__(, ) __VA_ARGS__)

}  // namespace gpunode::nvml
