#include "harness/gpu_cluster_objects.h"

namespace gpunode::testing {

using json = nlohmann::json;

json GpuNode(const std::string& name, int capacity, int allocatable, bool plugin_label) {
  json labels = {{"nvidia.com/gpu.present", "true"},
                 {"nvidia.com/gpu.count", std::to_string(capacity)},
                 {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                 {"gpu.count", std::to_string(capacity)},
                 {"kubernetes.io/hostname", name}};
  if (plugin_label) labels["nvidia.com/gpu.deploy.device-plugin"] = "true";
  return {
      {"kind", "Node"},
      {"apiVersion", "v1"},
      {"metadata", {{"name", name}, {"labels", labels}}},
      {"spec",
       {{"taints", {{{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}}}}}},
      {"status",
       {{"capacity",
         {{"nvidia.com/gpu", std::to_string(capacity)},
          {"cpu", "96"},
          {"memory", "1Ti"},
          {"pods", "110"}}},
        {"allocatable",
         {{"nvidia.com/gpu", std::to_string(allocatable)},
          {"cpu", "96"},
          {"memory", "1Ti"},
          {"pods", "110"}}},
        {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

json DevicePluginDaemonSet() {
  return {
      {"kind", "DaemonSet"},
      {"apiVersion", "apps/v1"},
      {"metadata",
       {{"name", kDevicePluginSet}, {"namespace", kDevicePluginNamespace}, {"generation", 1}}},
      {"spec",
       {{"selector", {{"matchLabels", {{"app", kDevicePluginSet}}}}},
        {"template",
         {{"metadata", {{"labels", {{"app", kDevicePluginSet}}}}},
          {"spec",
           {{"nodeSelector", {{"nvidia.com/gpu.deploy.device-plugin", "true"}}},
            {"tolerations", {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}}},
            {"containers",
             {{{"name", "plugin"}, {"image", "nvcr.io/nvidia/k8s-device-plugin:v0.15.0"}}}}}}}}}}};
}

json DevicePluginPod(const std::string& node, bool ready) {
  return {
      {"kind", "Pod"},
      {"apiVersion", "v1"},
      {"metadata",
       {{"name", std::string(kDevicePluginSet) + "-" + node},
        {"namespace", kDevicePluginNamespace},
        {"ownerReferences",
         {{{"apiVersion", "apps/v1"},
           {"kind", "DaemonSet"},
           {"name", kDevicePluginSet},
           {"uid", "3b1c0000-0000-4000-8000-000000000001"},
           {"controller", true}}}}}},
      {"spec", {{"nodeName", node}, {"containers", {{{"name", "plugin"}, {"image", "plugin"}}}}}},
      {"status",
       {{"phase", "Running"},
        {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
}

std::string SmokeDoctorReport(const std::string& status, const std::string& evidence) {
  bool ok = status == "ok";
  json report = {
      {"findings",
       {{{"layer", "container"},
         {"id", "container.visible-devices"},
         {"status", status},
         {"summary", ok ? "sees exactly the 2 GPUs it was given" : "sees GPUs it was not given"},
         {"evidence", evidence},
         {"fix", ""}}}},
      {"summary", {{"ok", ok ? 1 : 0}, {"fail", ok ? 0 : 1}}}};
  return report.dump();
}

nlohmann::json JobSetJob() {
  return nlohmann::json::parse(R"({
    "apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "pretrain-workers-0", "namespace": "ml", "uid": "job-uid",
                 "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                      "name": "pretrain", "uid": "jobset-uid",
                                      "controller": true}]},
    "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": []}}}})");
}

nlohmann::json JobSetPod(const std::string& pod, const std::string& node,
                         const std::string& created) {
  nlohmann::json object = nlohmann::json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"namespace": "ml", "uid": "pod-uid",
                 "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                      "name": "pretrain-workers-0", "uid": "job-uid",
                                      "controller": true}]},
    "spec": {"containers": [{"name": "trainer",
             "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
    "status": {"phase": "Running"}})");
  object["metadata"]["name"] = pod;
  object["metadata"]["creationTimestamp"] = created;
  object["spec"]["nodeName"] = node;
  return object;
}

}  // namespace gpunode::testing
