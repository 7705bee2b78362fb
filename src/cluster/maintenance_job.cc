#include "cluster/maintenance_job.h"

#include <cstdint>
#include <cstdio>

#include "core/file_io.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "core/yaml_json.h"
#include "kube/api_object.h"
#include "yaml-cpp/yaml.h"

namespace gpunode::cluster {
namespace {

namespace od = kube::od;
using json = nlohmann::json;
using core::StrCat;
using kube::FieldKey;
using kube::FieldPath;
using kube::JsonWalk;

constexpr std::string_view kFixManifest = "give a batch/v1 Job manifest";

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
    auto var_name = var.find("name");  // end() when var is not an object
    if (var_name != var.end() && *var_name == std::string(name)) {
      var = {{"name", name}, {"value", value}};
      return;
    }
  }
  container["env"].push_back({{"name", name}, {"value", value}});
}

// What the checks of ParseMaintenanceJob read of the manifest.
struct JobManifest {
  std::string kind = "none";
  std::string api_version = "none";
  size_t containers = 0;  // spec.template.spec.containers
  std::string restart_policy;
  std::string node_name;
  bool node_selector = false;
  bool affinity = false;
};

absl::Status ReadManifestPodSpec(od::value& pod_spec, const JsonWalk& walk, JobManifest& out) {
  constexpr std::string_view kPodSpec = "spec.template.spec";
  return walk.ForEachField(pod_spec, kPodSpec, [&](const FieldKey& key, od::value& val) {
    if (key == "containers") {
      return walk.ForEachElement(val, FieldPath(kPodSpec, ".containers"), [&](od::value&) {
        ++out.containers;
        return absl::OkStatus();
      });
    }
    if (key == "restartPolicy") {
      return walk.ReadStringCopy(val, FieldPath(kPodSpec, ".restartPolicy"), out.restart_policy);
    }
    if (key == "nodeName") {
      return walk.ReadStringCopy(val, FieldPath(kPodSpec, ".nodeName"), out.node_name);
    }
    if (key == "nodeSelector") {
      return walk.IsSet(val, FieldPath(kPodSpec, ".nodeSelector"), "an object", out.node_selector);
    }
    if (key == "affinity") {
      return walk.IsSet(val, FieldPath(kPodSpec, ".affinity"), "an object", out.affinity);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<JobManifest> ReadJobManifest(const json& job, std::string_view source) {
  // YAML takes any bytes in a string; JSON, and so the Job sent to the API server, only UTF-8.
  std::string text;
  try {
    text = job.dump();
  } catch (const json::type_error& e) {
    return absl::InvalidArgumentError(
        StrCat(source, ": a string is not UTF-8 text (", e.what(), "); ", kFixManifest));
  }
  JobManifest out;
  RETURN_IF_ERROR(kube::ReadJsonObject(
      text, source, "Job", kFixManifest, [&](od::object& obj, const JsonWalk& walk) {
        return walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
          if (key == "kind") return walk.ReadStringCopy(val, "kind", out.kind);
          if (key == "apiVersion") return walk.ReadStringCopy(val, "apiVersion", out.api_version);
          if (key != "spec") return absl::OkStatus();
          return walk.ForEachField(val, "spec", [&](const FieldKey& key, od::value& val) {
            if (key != "template") return absl::OkStatus();
            return walk.ForEachField(val, "spec.template",
                                     [&](const FieldKey& key, od::value& val) {
                                       if (key != "spec") return absl::OkStatus();
                                       return ReadManifestPodSpec(val, walk, out);
                                     });
          });
        });
      }));
  return out;
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
  ASSIGN_OR_RETURN(JobManifest manifest, ReadJobManifest(job, source));
  if (manifest.kind != "Job" || manifest.api_version != "batch/v1") {
    return bad("kind", StrCat("want a Job of apiVersion batch/v1, found ", manifest.kind, " of ",
                              manifest.api_version));
  }
  if (manifest.containers == 0) {
    return bad("spec.template.spec.containers", "missing; the Job needs a container to run");
  }
  const std::string& restart = manifest.restart_policy;
  if (restart.empty()) {
    // Read above: spec.template.spec is an object, so this only adds a member.
    job["spec"]["template"]["spec"]["restartPolicy"] = "Never";
  } else if (restart != "Never" && restart != "OnFailure") {
    return bad("spec.template.spec.restartPolicy",
               StrCat("\"", restart, "\" is not allowed in a Job; use Never or OnFailure"));
  }
  if (!manifest.node_name.empty() || manifest.node_selector || manifest.affinity) {
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
