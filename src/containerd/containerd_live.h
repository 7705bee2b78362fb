// What a running containerd has loaded, asked through CRI RuntimeService.Status on its socket:
// the runtime conditions and, from the verbose "config" document, each runtime handler with its
// type and options. `gpunode runtime status` and doctor's runtime.containerd-live check use it.
// Its images and their filesystem, asked through CRI ImageService, for doctor's kubelet.image-gc.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace gpunode::containerd {

inline constexpr char kDefaultContainerdSocket[] = "/run/containerd/containerd.sock";

struct CriCondition {
  std::string type;  // RuntimeReady, NetworkReady, ...
  bool status = false;
  std::string reason;
  std::string message;
};

struct CriHandler {
  std::string name;
  std::string runtime_type;
  nlohmann::json options = nlohmann::json::object();  // e.g. BinaryName, SystemdCgroup
};

struct CriRuntimeStatus {
  std::vector<CriCondition> conditions;
  std::string default_runtime;       // containerd.defaultRuntimeName of the loaded config
  std::vector<CriHandler> handlers;  // from info["config"], sorted by name
  // Names in StatusResponse.runtime_handlers (cri-api v0.30+, containerd 2.x; empty on 1.x).
  std::vector<std::string> reported_handlers;
};

struct CriVersion {
  std::string runtime_name;     // "containerd"
  std::string runtime_version;  // "v1.6.20", "1.7.24~ds1"
};

// Calls RuntimeService/Version on unix://`socket`. Unavailable when nothing answers within
// `timeout`.
absl::StatusOr<CriVersion> QueryCriVersion(const std::string& socket,
                                           std::chrono::milliseconds timeout);

// Calls Status(verbose=true) on unix://`socket`. Unavailable when nothing answers within
// `timeout`; InvalidArgument when the reply's "config" is not the JSON containerd writes.
absl::StatusOr<CriRuntimeStatus> QueryCriStatus(const std::string& socket,
                                                std::chrono::milliseconds timeout);

struct CriImage {
  std::string id;
  std::vector<std::string> tags;     // repo_tags; empty for an untagged image
  std::vector<std::string> digests;  // repo_digests
  uint64_t size_bytes = 0;           // containerd: the packed (compressed) size
  bool pinned = false;               // kept from garbage collection (containerd: the sandbox image)
};

struct CriImageFilesystem {
  std::string mountpoint;   // a path on the runtime's host
  uint64_t used_bytes = 0;  // by images, not the filesystem's whole use
};

// Calls ImageService/ListImages on unix://`socket`.
absl::StatusOr<std::vector<CriImage>> QueryCriImages(const std::string& socket,
                                                     std::chrono::milliseconds timeout);

// Calls ImageService/ImageFsInfo on unix://`socket`: the image filesystems (containerd reports
// one, its snapshotter's root). NotFound when the runtime names none.
absl::StatusOr<std::vector<CriImageFilesystem>> QueryCriImageFilesystems(
    const std::string& socket, std::chrono::milliseconds timeout);

// The handler called `name`, or null when containerd has not loaded it.
const CriHandler* FindHandler(const CriRuntimeStatus& status, const std::string& name);

// Parses the verbose "config" document into `status` (exposed for tests of other runtimes' shapes).
absl::Status ParseCriConfig(const std::string& config_json, CriRuntimeStatus& status);

}  // namespace gpunode::containerd
