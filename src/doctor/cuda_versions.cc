#include "doctor/cuda_versions.h"

#include <array>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gpunode::doctor {
namespace {

struct MinimumDriver {
  CudaVersion cuda;
  const char* driver;
};

// "CUDA Toolkit and Corresponding Driver Versions", Linux x86_64, GA release of each minor
// version (SOURCES.md). There was no CUDA 12.7.
constexpr std::array<MinimumDriver, 19> kMinimumDrivers = {{
    {{11, 0}, "450.51.05"}, {{11, 1}, "455.23"},    {{11, 2}, "460.27.03"}, {{11, 3}, "465.19.01"},
    {{11, 4}, "470.42.01"}, {{11, 5}, "495.29.05"}, {{11, 6}, "510.39.01"}, {{11, 7}, "515.43.04"},
    {{11, 8}, "520.61.05"}, {{12, 0}, "525.60.13"}, {{12, 1}, "530.30.02"}, {{12, 2}, "535.54.03"},
    {{12, 3}, "545.23.06"}, {{12, 4}, "550.54.14"}, {{12, 5}, "555.42.02"}, {{12, 6}, "560.28.03"},
    {{12, 8}, "570.26"},    {{12, 9}, "575.51.03"}, {{13, 0}, "580.65.06"},
}};

std::vector<int> Parts(absl::string_view version) {
  std::vector<int> parts;
  for (absl::string_view part : absl::StrSplit(version, '.')) {
    int value = 0;
    if (!absl::SimpleAtoi(part, &value)) value = 0;
    parts.push_back(value);
  }
  return parts;
}

}  // namespace

absl::StatusOr<CudaVersion> ParseCudaVersion(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '.');
  CudaVersion version;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &version.major) ||
      !absl::SimpleAtoi(parts[1], &version.minor) || version.major <= 0 || version.minor < 0 ||
      parts[0].empty() || parts[1].empty() || parts[0][0] == '+' || parts[1][0] == '+') {
    return absl::InvalidArgumentError(
        absl::StrCat("--cuda ", text, ": not a CUDA version; give MAJOR.MINOR, e.g. --cuda 12.4"));
  }
  return version;
}

CudaVersion CudaVersionFromNvml(int version) { return {version / 1000, (version % 1000) / 10}; }

std::string FormatCudaVersion(CudaVersion version) {
  return absl::StrCat(version.major, ".", version.minor);
}

std::optional<std::string> MinimumDriverFor(CudaVersion cuda) {
  for (const MinimumDriver& row : kMinimumDrivers) {
    if (row.cuda == cuda) return std::string(row.driver);
  }
  return std::nullopt;
}

std::optional<std::string> MinorCompatibilityDriverFor(int cuda_major) {
  // The same table's "Minimum Required Driver Version for CUDA Minor Version Compatibility".
  switch (cuda_major) {
    case 11:
      return "450.80.02";
    case 12:
      return "525.60.13";
    case 13:
      return "580.65.06";
    default:
      return std::nullopt;
  }
}

int CompareVersions(absl::string_view a, absl::string_view b) {
  std::vector<int> x = Parts(a);
  std::vector<int> y = Parts(b);
  for (size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
    int p = i < x.size() ? x[i] : 0;
    int q = i < y.size() ? y[i] : 0;
    if (p != q) return p < q ? -1 : 1;
  }
  return 0;
}

}  // namespace gpunode::doctor
