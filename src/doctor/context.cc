#include "doctor/context.h"

#include "absl/strings/str_cat.h"

namespace gpunode::doctor {

Context::Context(const core::HostRoot& host, const nvml::Library* nvml, absl::Status nvml_status,
                 DoctorOptions options)
    : host_(host),
      nvml_(nvml),
      nvml_status_(std::move(nvml_status)),
      options_(std::move(options)) {}

const absl::StatusOr<std::vector<host::PciDevice>>& Context::PciGpus() const {
  if (!pci_) pci_ = host::ScanNvidiaGpus(host_);
  return *pci_;
}

const absl::StatusOr<gpu::NodeSnapshot>& Context::Node() const {
  if (!node_) {
    node_ = nvml_ != nullptr ? gpu::ReadNodeSnapshot(*nvml_, host_)
                             : absl::StatusOr<gpu::NodeSnapshot>(nvml_status_);
  }
  return *node_;
}

std::string Context::ContainerdSocket() const {
  if (!options_.containerd_socket.empty()) return options_.containerd_socket;
  return host_.Resolve("/run/containerd/containerd.sock");
}

std::string Context::DevicePluginDir() const {
  return absl::StrCat(options_.kubelet_dir, "/device-plugins");
}

}  // namespace gpunode::doctor
