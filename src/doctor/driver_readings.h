// What the driver.* checks on the node and the container.* checks inside a pod both judge: the
// kernel module's version and whether the driver runs a given CUDA release.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "doctor/context.h"
#include "doctor/cuda_versions.h"
#include "doctor/finding.h"
#include "doctor/runner.h"

namespace gpunode::doctor {

inline constexpr char kDriverVersionFile[] = "/proc/driver/nvidia/version";

// The version in /proc/driver/nvidia/version; the error names the file.
absl::StatusOr<std::string> KernelModuleVersion(const core::HostRoot& host);

struct CudaSupport {
  std::string driver;                    // "550.90.07"; empty when NVML does not say
  std::optional<CudaVersion> supported;  // the newest CUDA the driver runs
  // "driver 550.90.07 supports CUDA up to 12.4"
  std::string Describe() const;
};

CudaSupport ReadCudaSupport(const Gpus& gpus);

// nullopt when the driver runs `wanted` fully. Otherwise a warn when it runs only through minor
// version compatibility, or a fail whose fix names the minimum driver (NVIDIA's table) and then
// `alternative` ("build the workloads for CUDA 12.4"). `what` names the need in the summary
// ("CUDA 13.0", "the image's CUDA 13.0").
std::optional<Finding> JudgeCudaNeed(const CudaSupport& support, CudaVersion wanted,
                                     absl::string_view what, absl::string_view alternative,
                                     std::string evidence);

}  // namespace gpunode::doctor
