// The answer to one container's Allocate request, in the shape NVIDIA's plugin gives it for each
// device list strategy (envvar, volume-mounts, cdi-annotations, cdi-cri) and passDeviceSpecs.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "plugin/rm/node.h"
#include "plugin/rm/resources.h"
#include "plugin/server/host_devices.h"
#include "plugin_config/config.h"

namespace gpunode::plugin {

inline constexpr const char* kCdiKind = "k8s.device-plugin.nvidia.com/gpu";
inline constexpr const char* kVisibleDevices = "NVIDIA_VISIBLE_DEVICES";
inline constexpr const char* kContainerDevicesDir = "/var/run/nvidia-container-devices";

// `devices` are the container's devices (replicas included); each GPU or MIG device is passed
// once. Fails only when passDeviceSpecs needs a MIG capability device the host does not list.
absl::StatusOr<v1beta1::ContainerAllocateResponse> ContainerResponse(
    const plugin_config::Config& config, const Node& node, const HostDevices& host,
    const std::vector<const PluginDevice*>& devices);

}  // namespace gpunode::plugin
