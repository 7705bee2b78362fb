// The operator's maintenance step of a driver upgrade, as a Job: a batch/v1 Job manifest (YAML or
// JSON) that `gpunode cluster upgrade --maintenance-job FILE` runs once per node. gpunode pins it
// to the node with spec.template.spec.nodeName (which is also how it runs on a node the upgrade
// has cordoned), lets it tolerate every taint, and tells its containers the node and the target
// driver. It adds no privilege: a template that needs to be privileged (a driver installer) says
// so itself.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {

// The label every maintenance Job carries, so a leftover is found with a selector.
inline constexpr std::string_view kMaintenanceJobLabel = "gpunode.io/upgrade-maintenance";
// Environment variables set in each of the Job's containers.
inline constexpr std::string_view kMaintenanceNodeEnv = "GPUNODE_NODE_NAME";
inline constexpr std::string_view kMaintenanceDriverEnv = "GPUNODE_TARGET_DRIVER_VERSION";

// Reads and checks the template: a Job (batch/v1) with a pod template with containers and a
// restartPolicy of Never or OnFailure (Never when absent). One line naming the file and the field
// otherwise.
absl::StatusOr<nlohmann::json> ReadMaintenanceJob(const std::string& path);

// The template parsed from text; `source` names it in errors.
absl::StatusOr<nlohmann::json> ParseMaintenanceJob(std::string_view text, std::string_view source);

// "gpunode-upgrade-<node>", a valid Job name (a DNS label: dots become dashes; a long name is cut
// and ends in a hash of the whole, so two nodes never share one).
std::string MaintenanceJobName(std::string_view node);

// The Job for `node`, in namespace `ns`, as it is created.
nlohmann::json MaintenanceJobFor(const nlohmann::json& job_template, std::string_view node,
                                 std::string_view ns, std::string_view target_driver);

}  // namespace gpunode::cluster
