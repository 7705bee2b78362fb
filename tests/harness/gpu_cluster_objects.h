// Objects of a GPU cluster as the API server double serves them, for the tests that run the
// cluster commands against it: GPU nodes, NVIDIA's device plugin DaemonSet and its pods, a
// JobSet's training pod, and the report a smoke pod prints.
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace gpunode::testing {

inline constexpr char kDevicePluginNamespace[] = "gpu-operator";
inline constexpr char kDevicePluginSet[] = "nvidia-device-plugin-daemonset";

// A Ready H100 node with `capacity` GPUs of which `allocatable` are healthy, tainted
// nvidia.com/gpu=present:NoSchedule, labelled as GFD and the operator's own `gpu.count` label
// do, and selected by the device plugin's DaemonSet unless `plugin_label` is false.
nlohmann::json GpuNode(const std::string& name, int capacity = 8, int allocatable = 8,
                       bool plugin_label = true);

// NVIDIA's device plugin DaemonSet (selector nvidia.com/gpu.deploy.device-plugin=true), and its
// Running pod on `node`.
nlohmann::json DevicePluginDaemonSet();
nlohmann::json DevicePluginPod(const std::string& node, bool ready = true);

// A training run as JobSet makes it: the Job ml/pretrain-workers-0 (uid job-uid) that the JobSet
// ml/pretrain (uid jobset-uid) controls, and that Job's Running pod `pod` (uid pod-uid) on
// `node`, holding 8 GPUs since `created` (RFC 3339).
nlohmann::json JobSetJob();
nlohmann::json JobSetPod(const std::string& pod, const std::string& node,
                         const std::string& created);

// What `gpunode doctor --in-container -o json` prints in a smoke pod given 2 GPUs: its
// container.visible-devices finding with `status` ("ok" or "fail") and `evidence`.
std::string SmokeDoctorReport(const std::string& status = "ok", const std::string& evidence = "");

}  // namespace gpunode::testing
