// Registering a resource with the kubelet's Registration service on kubelet.sock.
#pragma once

#include <chrono>
#include <string>

#include "absl/status/status.h"

namespace gpunode::plugin {

inline constexpr const char* kDevicePluginApiVersion = "v1beta1";

// Calls Register (version v1beta1, `endpoint` = our socket's file name, options with
// get_preferred_allocation_available). The kubelet dials our socket and asks for our options
// before it answers, so our server must already be serving.
absl::Status RegisterWithKubelet(const std::string& kubelet_socket, const std::string& endpoint,
                                 const std::string& resource_name,
                                 std::chrono::milliseconds timeout);

}  // namespace gpunode::plugin
