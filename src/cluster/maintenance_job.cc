#include "cluster/maintenance_job.h"

#include <cstdint>
#include <cstdio>

#include "core/file_io.h"
#include "core/json_field.h"
#include "core/text.h"
#include "core/yaml_json.h"
#include "yaml-cpp/yaml.h"

namespace gpunode::cluster {
namespace {

using json = nlohmann::json;
using core::StrCat;

// A Job name becomes the value of the job-name label of its pods: 63 characters at most.
constexpr size_t kMaxJobName = 63;

uint32_t Fnv1a(std::string_view text) {
  uint32_t hash = 2166136261u;
  for (char c : text) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 16777619u;
  }
  return hash;
}

void SetEnv(json& container, std::string_view name, std::string_view value) {
  if (!container.contains("env") || !container["env"].is_array()) container["env"] = json::array();
  for (json& var : container["env"]) {
    if (var.is_object() && core::JsonString(var, "name") == name) {
      var = {{"name", name}, {"value", value}};
      return;
    }
  }
  container["env"].push_back({{"name", name}, {"value", value}});
}

}  // namespace

absl::StatusOr<json> ParseMaintenanceJob(std::string_view text, std::string_view source) {
  json job;
  try {
    job = core::YamlToJson(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(StrCat(source, ": line ", e.mark.line + 1,
                                             ": not YAML or JSON: ", e.msg,
                                             "; give a batch/v1 Job manifest"));
  }
  auto bad = [&](std::string_view field, std::string_view what) {
    return absl::InvalidArgumentError(StrCat(source, ": ", field, ": ", what));
  };
  if (!job.is_object()) return bad("(document)", "not a mapping; give a batch/v1 Job manifest");
  if (core::JsonString(job, "kind") != "Job" || core::JsonString(job, "apiVersion") != "batch/v1") {
    return bad("kind", StrCat("want a Job of apiVersion batch/v1, found ",
                              core::JsonString(job, "kind", "none"), " of ",
                              core::JsonString(job, "apiVersion", "none")));
  }
  json* pod_spec = nullptr;
  if (job.contains("spec") && job["spec"].is_object() && job["spec"].contains("template") &&
      job["spec"]["template"].is_object() && job["spec"]["template"].contains("spec") &&
      job["spec"]["template"]["spec"].is_object()) {
    pod_spec = &job["spec"]["template"]["spec"];
  }
  if (pod_spec == nullptr || !pod_spec->contains("containers") ||
      !(*pod_spec)["containers"].is_array() || (*pod_spec)["containers"].empty()) {
    return bad("spec.template.spec.containers", "missing; the Job needs a container to run");
  }
  std::string restart = core::JsonString(*pod_spec, "restartPolicy");
  if (restart.empty()) {
    (*pod_spec)["restartPolicy"] = "Never";
  } else if (restart != "Never" && restart != "OnFailure") {
    return bad("spec.template.spec.restartPolicy",
               StrCat("\"", restart, "\" is not allowed in a Job; use Never or OnFailure"));
  }
  if (!core::JsonStringAt(*pod_spec, {"nodeName"}).empty() || pod_spec->contains("nodeSelector") ||
      pod_spec->contains("affinity")) {
    return bad("spec.template.spec",
               "remove nodeName, nodeSelector and affinity: gpunode pins the Job to each node");
  }
  return job;
}

absl::StatusOr<json> ReadMaintenanceJob(const std::string& path) {
  absl::StatusOr<std::string> text = core::ReadFile(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        StrCat("--maintenance-job ", path, ": ", core::View(text.status().message())));
  }
  return ParseMaintenanceJob(*text, path);
}

std::string MaintenanceJobName(std::string_view node) {
  std::string name = StrCat("gpunode-upgrade-", node);
  for (char& c : name) {
    if (c == '.') c = '-';
  }
  if (name.size() <= kMaxJobName) return name;
  char hash[10];
  std::snprintf(hash, sizeof hash, "-%08x", Fnv1a(node));
  name.resize(kMaxJobName - 9);
  while (!name.empty() && name.back() == '-') name.pop_back();
  return name + hash;
}

json MaintenanceJobFor(const json& job_template, std::string_view node, std::string_view ns,
                       std::string_view target_driver) {
  json job = job_template;
  json& metadata = job["metadata"];
  if (!metadata.is_object()) metadata = json::object();
  metadata.erase("generateName");
  metadata["name"] = MaintenanceJobName(node);
  metadata["namespace"] = ns;
  if (!metadata.contains("labels") || !metadata["labels"].is_object()) {
    metadata["labels"] = json::object();
  }
  metadata["labels"][std::string(kMaintenanceJobLabel)] = "true";
  if (!metadata.contains("annotations") || !metadata["annotations"].is_object()) {
    metadata["annotations"] = json::object();
  }
  metadata["annotations"]["gpunode.io/upgrade-node"] = node;
  metadata["annotations"]["gpunode.io/upgrade-target"] = target_driver;
  json& pod_spec = job["spec"]["template"]["spec"];
  pod_spec["nodeName"] = node;
  // The node is cordoned and may carry any taint (nvidia.com/gpu, not-ready while it reboots).
  if (!pod_spec.contains("tolerations") || !pod_spec["tolerations"].is_array()) {
    pod_spec["tolerations"] = json::array();
  }
  pod_spec["tolerations"].push_back({{"operator", "Exists"}});
  for (const char* list : {"initContainers", "containers"}) {
    if (!pod_spec.contains(list) || !pod_spec[list].is_array()) continue;
    for (json& container : pod_spec[list]) {
      if (!container.is_object()) continue;
      SetEnv(container, kMaintenanceNodeEnv, node);
      SetEnv(container, kMaintenanceDriverEnv, target_driver);
    }
  }
  return job;
}

}  // namespace gpunode::cluster
