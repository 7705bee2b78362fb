// What the checks look at: the host (through a HostRoot), NVML when it opened, and the options of
// the run. Readings several checks share are made once, on first use.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/host_root.h"
#include "doctor/cuda_versions.h"
#include "gpu/node_snapshot.h"
#include "host/pci.h"
#include "nvml/library.h"

namespace gpunode::doctor {

struct DoctorOptions {
  std::optional<CudaVersion> cuda;  // --cuda: what the workloads need
  bool in_container = false;
  std::string kubelet_dir = "/var/lib/kubelet";                   // a host path
  std::string containerd_config = "/etc/containerd/config.toml";  // a host path
  // A path on this machine; empty means /run/containerd/containerd.sock under the host root.
  std::string containerd_socket;
  // The pod's environment, read only with in_container: NVIDIA_VISIBLE_DEVICES,
  // NVIDIA_DRIVER_CAPABILITIES, and the CUDA release NVIDIA's CUDA images declare (CUDA_VERSION,
  // NV_CUDA_CUDART_VERSION).
  std::optional<std::string> visible_devices;
  std::optional<std::string> driver_capabilities;
  std::optional<std::string> image_cuda_version;
  std::optional<std::string> image_cudart_version;
  std::chrono::milliseconds rpc_timeout{2000};
  // The MPS root the control daemons use (a host path; --mps-root or MPS_ROOT).
  std::string mps_root = "/run/nvidia/mps";
  // Where the DRA plugin writes its claims' CDI specs (a host path; --cdi-root).
  std::string cdi_root = "/var/run/cdi";
};

class Context {
 public:
  // `nvml` may be null; `nvml_status` then says why it did not open.
  Context(const core::HostRoot& host, const nvml::Library* nvml, absl::Status nvml_status,
          DoctorOptions options);

  const core::HostRoot& host() const { return host_; }
  const nvml::Library* nvml() const { return nvml_; }
  const absl::Status& nvml_status() const { return nvml_status_; }
  const DoctorOptions& options() const { return options_; }

  const absl::StatusOr<std::vector<host::PciDevice>>& PciGpus() const;
  // The GPUs as NVML reads them once; without NVML, why it did not open.
  const absl::StatusOr<gpu::NodeSnapshot>& Node() const;
  std::string ContainerdSocket() const;
  std::string DevicePluginDir() const;  // a host path

 private:
  const core::HostRoot& host_;
  const nvml::Library* nvml_;
  absl::Status nvml_status_;
  DoctorOptions options_;
  mutable std::optional<absl::StatusOr<std::vector<host::PciDevice>>> pci_;
  mutable std::optional<absl::StatusOr<gpu::NodeSnapshot>> node_;
};

}  // namespace gpunode::doctor
