// Checks a CDI spec against the rules of the CDI project's JSON schema (schema/schema.json and
// schema/defs.json) and the Go validation behind it (pkg/cdi: qualified names, device names,
// container edits; specs-go/version.go: the version), written out here so that gpunode needs no
// JSON-schema engine:
//  - top level: cdiVersion, kind and devices required; nothing but those, annotations and
//    containerEdits; cdiVersion a released version (0.3.0 ... 0.8.0) no lower than the features
//    used need; kind "<vendor>/<class>" (letters, digits, "_", "-", "."; starting with a letter
//    and ending with a letter or digit; "." in the class from 0.6.0);
//  - devices: name and containerEdits required, nothing else but annotations; names unique,
//    alphanumeric at both ends with "_", "-", ".", ":" between; edits not empty;
//  - edits: env "NAME=value"; deviceNodes with an absolute path (and absolute hostPath), type one
//    of b c u p, permissions of r w m, integer major/minor/uid/gid; mounts with absolute hostPath
//    and containerPath and string options; hooks with hookName one of the OCI stages
//    (prestart, createRuntime, createContainer, startContainer, poststart, poststop), an absolute
//    path, string args/env and an unsigned 32-bit timeout;
//  - annotations: an object of strings.
#pragma once

#include <string>
#include <vector>

#include "cdi/spec.h"

namespace gpunode::cdi {

struct SpecProblem {
  std::string json_path;  // "$.devices[3].containerEdits.mounts[0].hostPath"
  std::string message;    // "must be an absolute path, got \"lib/libcuda.so\""
};

// Every problem found, in document order; empty when the spec is valid.
std::vector<SpecProblem> ValidateSpec(const Spec& spec);

// What the schema allows but a container cannot start with, in document order: a MIG device
// (named "<gpu>:<mig>" or by its "MIG-" UUID, as nvidia-ctk and gpunode name them) whose device
// nodes include no /dev/nvidia-caps/ access capability; the driver refuses the container its MIG
// device without them. Checked on a spec that validates.
std::vector<SpecProblem> UnusableDevices(const Spec& spec);

}  // namespace gpunode::cdi
