// Which pod and container a process belongs to, from its /proc/PID/cgroup.
#pragma once

#include <string>
#include <string_view>

namespace gpunode::metrics {

struct CgroupIdentity {
  // The pod's UID with dashes ("0b5c…-…"); empty when the process is in no Kubernetes pod.
  std::string pod_uid;
  // The container runtime's id (64 hex digits for containerd, CRI-O and Docker); empty when the
  // process is not in a container's cgroup (a host process, or a pod's conmon).
  std::string container_id;
};

// Reads the contents of /proc/PID/cgroup (cgroup v1, v2 or hybrid; cgroupfs or systemd driver;
// containerd, CRI-O or Docker; paths relative to a cgroup namespace with "/.." prefixes). Never
// fails: text it does not recognise yields an empty identity.
CgroupIdentity ParseProcCgroup(std::string_view contents);

}  // namespace gpunode::metrics
