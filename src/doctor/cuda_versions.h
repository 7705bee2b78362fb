// NVIDIA's published minimum Linux driver for each CUDA toolkit release, and version arithmetic
// on CUDA ("12.4") and driver ("550.54.15") versions. Source: SOURCES.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpunode::doctor {

struct CudaVersion {
  int major = 0;
  int minor = 0;
  friend auto operator<=>(const CudaVersion&, const CudaVersion&) = default;
};

// "12.4" -> {12, 4}; InvalidArgument for anything else.
absl::StatusOr<CudaVersion> ParseCudaVersion(absl::string_view text);
// 12040 (NVML's nvmlSystemGetCudaDriverVersion) -> {12, 4}.
CudaVersion CudaVersionFromNvml(int version);
std::string FormatCudaVersion(CudaVersion version);

// The driver the toolkit's GA release needs for full support ("550.54.14" for 12.4); nullopt for a
// release not in the table.
std::optional<std::string> MinimumDriverFor(CudaVersion cuda);
// The oldest driver of the major release that runs it through minor version compatibility
// (without PTX JIT of newer code); nullopt for majors before 11.
std::optional<std::string> MinorCompatibilityDriverFor(int cuda_major);

// Numeric dotted comparison: "550.54.15" < "550.127.05". Non-numeric parts compare as 0.
int CompareVersions(absl::string_view a, absl::string_view b);

}  // namespace gpunode::doctor
