#include "doctor/driver_readings.h"

#include "absl/strings/str_cat.h"
#include "doctor/parsers.h"
#include "doctor/runner.h"
#include "nvml/system.h"

namespace gpunode::doctor {

absl::StatusOr<std::string> KernelModuleVersion(const core::HostRoot& host) {
  absl::StatusOr<std::string> text = host.ReadFile(kDriverVersionFile);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::string> version = ParseNvrmVersion(*text);
  if (!version.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kDriverVersionFile, ": ", version.status().message()));
  }
  return version;
}

std::string CudaSupport::Describe() const {
  return absl::StrCat("driver ", driver.empty() ? "?" : driver, " supports CUDA up to ",
                      supported ? FormatCudaVersion(*supported) : std::string("?"));
}

CudaSupport ReadCudaSupport(const Gpus& gpus) {
  CudaSupport support;
  absl::StatusOr<int> cuda = nvml::CudaDriverVersion(gpus.nvml);
  if (cuda.ok()) support.supported = CudaVersionFromNvml(*cuda);
  support.driver = gpus.node.driver_version.value_or("");
  return support;
}

std::optional<Finding> JudgeCudaNeed(const CudaSupport& support, CudaVersion wanted,
                                     absl::string_view what, absl::string_view alternative,
                                     std::string evidence) {
  std::optional<std::string> minimum = MinimumDriverFor(wanted);
  bool enough = support.supported ? *support.supported >= wanted
                                  : minimum && CompareVersions(support.driver, *minimum) >= 0;
  if (enough) return std::nullopt;
  std::string fix = absl::StrCat(
      "upgrade the driver to ",
      minimum ? *minimum : absl::StrCat("a release for CUDA ", FormatCudaVersion(wanted)),
      " or newer");
  std::optional<std::string> compat = MinorCompatibilityDriverFor(wanted.major);
  bool minor_compatible = support.supported && support.supported->major == wanted.major && compat &&
                          CompareVersions(support.driver, *compat) >= 0;
  if (minor_compatible) {
    return Warn(absl::StrCat(what,
                             " runs only through minor version compatibility "
                             "(no PTX JIT of newer code)"),
                std::move(evidence), std::move(fix));
  }
  return Fail(absl::StrCat("the driver is too old for ", what), std::move(evidence),
              absl::StrCat(fix, "; or ", alternative));
}

}  // namespace gpunode::doctor
