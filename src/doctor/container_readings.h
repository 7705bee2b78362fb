// What a container tells doctor about its GPUs and its image: NVIDIA_VISIBLE_DEVICES as the NVIDIA
// Container Toolkit reads it, the CUDA release an image declares, and the versions in the names of
// the library files the runtime mounts. Each parser takes untrusted text (fuzzed in fuzz/doctor/).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "doctor/cuda_versions.h"

namespace gpunode::doctor {

// One entry of NVIDIA_VISIBLE_DEVICES.
struct DeviceRequest {
  enum class Kind {
    kIndex,    // "2": a host index
    kGpuUuid,  // "GPU-<uuid>"
    kMig,      // "MIG-<uuid>", "MIG-GPU-<uuid>/<gi>/<ci>" or "<gpu>:<mig>"
  };
  Kind kind = Kind::kIndex;
  std::string text;    // the entry, trimmed
  unsigned index = 0;  // kIndex only
};

struct VisibleDevices {
  enum class Kind {
    kUnset,  // not set: the runtime gives the container no GPU
    kNone,   // "" or "none": no GPU
    kVoid,   // "void": no GPU from the runtime hook; a CDI spec sets it when CDI injects them
    kAll,    // "all": every GPU of the node
    kList,
  };
  Kind kind = Kind::kUnset;
  std::vector<DeviceRequest> devices;  // kList only; duplicates removed, in the order given
};

VisibleDevices ParseVisibleDevices(const std::optional<std::string>& value);

// The GPU UUID in a MIG entry of the form drivers before R470 used: "MIG-GPU-<uuid>/<gi>/<ci>" ->
// "GPU-<uuid>"; nullopt for any other entry.
std::optional<std::string> MigParentUuid(absl::string_view entry);

// The MAJOR.MINOR at the start of a longer version: "12.4.1" (CUDA_VERSION), "12.4.127-1"
// (NV_CUDA_CUDART_VERSION) -> {12, 4}; nullopt when the text does not start with two numbers.
std::optional<CudaVersion> CudaVersionPrefix(absl::string_view text);

// The version in a versioned library file name: ("libcuda.so.550.90.07", "libcuda.so") ->
// "550.90.07". nullopt for another library, the bare name or a name that is not dotted numbers
// ("libcuda.so.1" gives "1").
std::optional<std::string> LibraryFileVersion(absl::string_view file_name,
                                              absl::string_view library);

}  // namespace gpunode::doctor
