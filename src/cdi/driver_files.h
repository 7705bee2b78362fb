// The files of an installed NVIDIA driver that a container needs, found under a driver root the
// way nvidia-container-toolkit's `nvidia-ctk cdi generate` finds them (pkg/nvcdi/driver-nvml.go,
// internal/discover, internal/lookup; see SOURCES.md):
//  - libraries: every 64-bit library in the driver root's ld.so.cache, and every file in the
//    usual library directories, whose real file is named "*.so.<driver version>" (libcuda,
//    libnvidia-ml, -ptxjitcompiler, -nvvm, -allocator, -cfg, -gpucomp, -opencl, ...), and the
//    legacy libnvidia-nvvm70.so.* of CUDA 11 drivers;
//  - binaries: nvidia-smi, nvidia-debugdump, nvidia-persistenced, nvidia-cuda-mps-control,
//    nvidia-cuda-mps-server, nvidia-imex, nvidia-imex-ctl, the first of each on the search path;
//  - GSP firmware: nvidia/<version>/gsp*.bin in the first firmware directory that has it;
//  - IPC: the persistenced and fabric manager sockets and the MPS pipe directory, when present;
//  - control device nodes: /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools and
//    /dev/nvidia-modeset, those present under the device root.
// Symbolic links are followed inside the driver root (an absolute link in
// /run/nvidia/driver points into that tree, not into the host's /).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/host_root.h"

namespace gpunode::cdi {

// A file to bind-mount: where the container sees it and where it is on the host.
struct DriverFile {
  std::string container_path;  // "/usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03"
  std::string host_path;       // the same under the driver root, links resolved
  friend bool operator==(const DriverFile&, const DriverFile&) = default;
};

struct DriverFiles {
  std::string version;
  std::vector<DriverFile> libraries;         // sorted by container path
  std::vector<DriverFile> binaries;          // in the order of the list above
  std::vector<DriverFile> firmware;          // sorted
  std::vector<DriverFile> ipc;               // sockets, then the MPS pipe directory
  std::vector<std::string> control_devices;  // container paths, "/dev/nvidiactl"
  // The create-symlinks hook's links, "<target>::<link>" (library_links.h).
  std::vector<std::string> library_links;
  // Each thing looked for and not found, for the log ("nvidia-debugdump: not on the search path").
  std::vector<std::string> missing;
};

struct DiscoveryOptions {
  std::string driver_root = "/";  // where the driver's files are read; the host paths' prefix
  std::string dev_root = "/";     // prefix of the device nodes' host paths
};

// Finds the driver's files for `version` (NVML's nvmlSystemGetDriverVersion). `host` reads /dev
// (under dev_root), /proc and /sys. Fails when the driver root has no libcuda.so.<version> or no
// libnvidia-ml.so.<version>: a spec without them runs nothing, so the error names what is
// missing and where it was looked for.
absl::StatusOr<DriverFiles> DiscoverDriverFiles(const std::string& version,
                                                const core::HostRoot& host,
                                                const DiscoveryOptions& options);

// `path` with every symbolic link in it resolved inside `root` (at most 40 links), the way the
// kernel would resolve it after chroot(root). NotFound when a component does not exist.
absl::StatusOr<std::string> ResolveInRoot(const core::HostRoot& root, const std::string& path);

// "<root><path>" without a doubled slash: ("/", "/dev/x") -> "/dev/x",
// ("/run/nvidia/driver", "/dev/x") -> "/run/nvidia/driver/dev/x".
std::string UnderRoot(const std::string& root, const std::string& path);

// Whether `path` under `host` is an executable regular file (links followed inside the root):
// the check that the hook a spec names exists where the runtime will run it.
bool IsExecutableFile(const core::HostRoot& host, const std::string& path);

}  // namespace gpunode::cdi
