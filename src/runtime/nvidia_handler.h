// The nvidia runtime handler as it goes into containerd's CRI plugin table: a runc.v2 runtime that
// copies the default runtime's settings (else runc's) and runs nvidia-container-runtime instead.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "containerd/cri_runtimes.h"
#include "toml++/toml.h"

namespace gpunode::runtime {

using containerd::kRuncV2RuntimeType;

struct HandlerRequest {
  std::string name = "nvidia";
  std::string binary = "/usr/bin/nvidia-container-runtime";
  bool set_as_default = false;
  bool enable_cdi = false;
};

// The runtime whose table the handler copies: the default runtime unless it is the handler itself
// or not runc-based, else runc; "" when neither is configured (containerd's bare runc defaults).
std::string InheritedRuntime(const toml::table& cri, const std::string& handler);

// `current` (a CRI plugin table) with the handler added. `original` is the table before gpunode
// first edited the file (the same table when it never did): without set_as_default / enable_cdi, a
// default_runtime_name or enable_cdi that gpunode set earlier goes back to its original value,
// while one the operator set stays. InvalidArgument if `containerd` or `runtimes` is not a table.
absl::StatusOr<toml::table> WithNvidiaHandler(const toml::table& current,
                                              const toml::table& original,
                                              const HandlerRequest& request);

}  // namespace gpunode::runtime
