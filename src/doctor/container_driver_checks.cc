// container.driver-version, container.driver-libraries and container.cuda-compat: the driver as
// the container sees it (the node's kernel module, the libraries the runtime mounted) and the CUDA
// release the image carries.
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "doctor/container_checks.h"
#include "doctor/driver_readings.h"
#include "doctor/runner.h"

namespace gpunode::doctor {
namespace {

// Where the NVIDIA runtime mounts the driver's libraries: the image's library directory
// (Debian/Ubuntu multiarch, or RHEL's lib64).
constexpr const char* kDriverLibraryDirs[] = {
    "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"};

struct LibraryFile {
  std::string path;
  std::string version;
};

// The versioned files of `library` ("libcuda.so") in `dirs`; the ldconfig links ("libcuda.so.1")
// carry no full version and are not counted.
std::vector<LibraryFile> FindVersioned(const Context& context, const std::vector<std::string>& dirs,
                                       absl::string_view library) {
  std::vector<LibraryFile> found;
  for (const std::string& dir : dirs) {
    absl::StatusOr<std::vector<std::string>> entries = context.host().ListDir(dir);
    if (!entries.ok()) continue;
    for (const std::string& entry : *entries) {
      std::optional<std::string> version = LibraryFileVersion(entry, library);
      if (version && absl::StrContains(*version, '.')) {
        found.push_back({absl::StrCat(dir, "/", entry), *version});
      }
    }
  }
  return found;
}

std::string Paths(const std::vector<LibraryFile>& files) {
  std::vector<std::string> paths;
  for (const LibraryFile& file : files) paths.push_back(file.path);
  return absl::StrJoin(paths, " ");
}

// The driver the node runs: NVML's view where it opened, else the kernel module's.
std::string NodeDriverVersion(const Context& context) {
  if (context.nvml() != nullptr && context.Node().ok() && context.Node()->driver_version) {
    return *context.Node()->driver_version;
  }
  absl::StatusOr<std::string> kernel = KernelModuleVersion(context.host());
  return kernel.ok() ? *kernel : "";
}

// The directories an image keeps libcudart in: the library dirs and each /usr/local/cuda*.
std::vector<std::string> CudaRuntimeDirs(const Context& context) {
  std::vector<std::string> dirs(std::begin(kDriverLibraryDirs), std::end(kDriverLibraryDirs));
  absl::StatusOr<std::vector<std::string>> local = context.host().ListDir("/usr/local");
  if (!local.ok()) return dirs;
  for (const std::string& entry : *local) {
    if (!absl::StartsWith(entry, "cuda")) continue;
    dirs.push_back(absl::StrCat("/usr/local/", entry, "/lib64"));
    for (const char* target : {"x86_64-linux", "sbsa-linux"}) {
      dirs.push_back(absl::StrCat("/usr/local/", entry, "/targets/", target, "/lib"));
    }
  }
  return dirs;
}

struct ImageCuda {
  CudaVersion version;
  std::string source;  // "CUDA_VERSION=12.4.1", or the libcudart file
};

// What NVIDIA's CUDA images declare in their environment, else the newest libcudart in the image.
std::optional<ImageCuda> ReadImageCuda(const Context& context) {
  const DoctorOptions& options = context.options();
  for (const auto& [name, value] :
       {std::pair{"CUDA_VERSION", &options.image_cuda_version},
        std::pair{"NV_CUDA_CUDART_VERSION", &options.image_cudart_version}}) {
    if (!*value) continue;
    if (std::optional<CudaVersion> version = CudaVersionPrefix(**value)) {
      return ImageCuda{*version, absl::StrCat(name, "=", **value)};
    }
  }
  std::optional<ImageCuda> newest;
  for (const LibraryFile& file : FindVersioned(context, CudaRuntimeDirs(context), "libcudart.so")) {
    std::optional<CudaVersion> version = CudaVersionPrefix(file.version);
    if (version && (!newest || *version > newest->version)) newest = ImageCuda{*version, file.path};
  }
  return newest;
}

}  // namespace

Finding ContainerDriverVersion(const Context& context, const Gpus& gpus) {
  absl::StatusOr<std::string> kernel = KernelModuleVersion(context.host());
  if (absl::IsInvalidArgument(kernel.status())) {
    return Fail("cannot read the kernel module's version", std::string(kernel.status().message()),
                absl::StrCat("cat ", kDriverVersionFile));
  }
  if (!kernel.ok()) {
    return Fail(absl::StrCat("the container sees no ", kDriverVersionFile),
                std::string(kernel.status().message()),
                "the NVIDIA runtime mounts the driver's /proc/driver/nvidia into the container: "
                "run the pod with the nvidia runtime (runtimeClassName: nvidia)");
  }
  std::string library = gpus.node.driver_version.value_or("");
  std::string evidence = absl::StrCat(kDriverVersionFile, ": ", *kernel, "; NVML: ", library);
  if (library != *kernel) {
    return Fail("the node's kernel module and the driver libraries in this container (NVML) differ",
                evidence,
                "an image that carries its own driver libraries (libnvidia-ml, libcuda) must drop "
                "them: the runtime mounts the node's; otherwise the node's driver was upgraded "
                "without a reboot: drain and reboot the node");
  }
  return Ok(
      absl::StrCat("driver ", *kernel, " in the node's kernel module and the container's NVML"),
      evidence);
}

Finding ContainerDriverLibraries(const Context& context) {
  std::string driver = NodeDriverVersion(context);
  std::vector<std::string> dirs(std::begin(kDriverLibraryDirs), std::end(kDriverLibraryDirs));
  const std::optional<std::string>& capabilities = context.options().driver_capabilities;
  std::string capabilities_note =
      absl::StrCat("NVIDIA_DRIVER_CAPABILITIES=", capabilities.value_or("(unset)"));
  std::vector<std::string> absent;
  std::vector<std::string> foreign;  // versions of another driver
  std::vector<std::string> mounted;
  for (const char* library : {"libcuda.so", "libnvidia-ml.so"}) {
    std::vector<LibraryFile> files = FindVersioned(context, dirs, library);
    std::vector<LibraryFile> matching;
    for (LibraryFile& file : files) {
      if (driver.empty() || file.version == driver) {
        matching.push_back(file);
      } else {
        foreign.push_back(file.path);
      }
    }
    if (!matching.empty()) {
      mounted.push_back(Paths(matching));
    } else if (files.empty()) {
      absent.push_back(library);
    }
  }
  std::string evidence = absl::StrCat("driver ", driver.empty() ? "?" : driver, "; ",
                                      capabilities_note, "; searched ", absl::StrJoin(dirs, " "));
  if (!absent.empty()) {
    return Fail(absl::StrCat(absl::StrJoin(absent, " and "),
                             " not mounted: CUDA programs stop with \"CUDA driver version is "
                             "insufficient for CUDA runtime version\" (libcuda) or NVML does not "
                             "load (libnvidia-ml)"),
                evidence,
                "the runtime mounts libcuda for the compute capability and libnvidia-ml for "
                "utility: leave NVIDIA_DRIVER_CAPABILITIES unset or set it to compute,utility, "
                "and run the pod with the nvidia runtime");
  }
  std::string image_fix =
      "the image carries driver libraries of its own (a cuda-drivers or libnvidia-compute "
      "package, or a copied libcuda): remove them, the runtime mounts the node's; CUDA forward "
      "compatibility libraries belong under /usr/local/cuda/compat only";
  if (mounted.size() < 2) {
    return Fail(
        absl::StrCat("the driver libraries in the image are not the node's driver ", driver),
        absl::StrCat(evidence, "; found ", absl::StrJoin(foreign, " ")), image_fix);
  }
  if (!foreign.empty()) {
    return Warn("the image also carries driver libraries of another version",
                absl::StrCat(evidence, "; also found ", absl::StrJoin(foreign, " ")), image_fix);
  }
  return Ok(absl::StrCat("libcuda and libnvidia-ml of driver ", driver, " mounted"),
            absl::StrJoin(mounted, " "));
}

Finding ContainerCudaCompat(const Context& context, const Gpus& gpus) {
  CudaSupport support = ReadCudaSupport(gpus);
  std::optional<ImageCuda> image = ReadImageCuda(context);
  std::string evidence = support.Describe();
  if (image) {
    absl::StrAppend(&evidence, "; image: CUDA ", FormatCudaVersion(image->version), " (",
                    image->source, ")");
  }
  std::string supported =
      support.supported ? FormatCudaVersion(*support.supported) : std::string("?");
  std::vector<Finding> verdicts;
  std::vector<std::string> runs;
  if (const std::optional<CudaVersion>& wanted = context.options().cuda) {
    std::string what = absl::StrCat("CUDA ", FormatCudaVersion(*wanted));
    if (std::optional<Finding> verdict =
            JudgeCudaNeed(support, *wanted, what,
                          absl::StrCat("build the workloads for CUDA ", supported), evidence)) {
      verdicts.push_back(*std::move(verdict));
    }
    runs.push_back(what);
  }
  if (image) {
    std::string what = absl::StrCat("the image's CUDA ", FormatCudaVersion(image->version));
    if (std::optional<Finding> verdict = JudgeCudaNeed(
            support, image->version, what,
            absl::StrCat("use an image built for CUDA ", supported, " or older"), evidence)) {
      if (verdict->status == CheckStatus::kFail) {
        absl::StrAppend(&verdict->summary,
                        " (\"CUDA driver version is insufficient for CUDA runtime version\")");
      }
      verdicts.push_back(*std::move(verdict));
    }
    runs.push_back(what);
  }
  for (CheckStatus worst : {CheckStatus::kFail, CheckStatus::kWarn}) {
    for (Finding& verdict : verdicts) {
      if (verdict.status == worst) return std::move(verdict);
    }
  }
  if (runs.empty()) {
    return Ok(absl::StrCat("the driver supports CUDA up to ", supported,
                           "; the image declares no CUDA (no CUDA_VERSION, no libcudart)"),
              evidence);
  }
  return Ok(
      absl::StrCat("the driver (CUDA up to ", supported, ") runs ", absl::StrJoin(runs, " and ")),
      evidence);
}

}  // namespace gpunode::doctor
