// The layout under an MPS root that NVIDIA's MPS control daemon and device plugin agree on, and
// gpunode's with them: per MPS resource a pipe and a log directory and a `.started` marker, one
// `.ready` marker for the node, and the `shm` tmpfs the clients share as /dev/shm. A DRA claim's
// daemon has a root of its own and no resource: its pipe, log and markers sit in the root itself.
// Two roles read it: the device plugin with `gpunode mps-control-daemon`, and the DRA plugin,
// which names a claim's daemon's root and waits on its markers.
#pragma once

#include <string>

namespace gpunode::host {

// Where an MPS client container sees the pipe directory: /mps/<resource>/pipe, the resource named
// in full as NVIDIA's daemon and plugin join it (/mps/nvidia.com/gpu/pipe).
inline constexpr const char* kMpsContainerRoot = "/mps";

struct MpsPaths {
  std::string root;  // the MPS root, e.g. /run/nvidia/mps
  // The resource's advertised name, e.g. "nvidia.com/gpu.shared"; empty for a claim's daemon.
  std::string resource;

  std::string ResourceDir() const { return resource.empty() ? root : root + "/" + resource; }
  std::string PipeDir() const { return ResourceDir() + "/pipe"; }
  std::string LogDir() const { return ResourceDir() + "/log"; }
  // The control daemon's own log, where it says why it refused to start or a client failed.
  std::string ControlLog() const { return LogDir() + "/control.log"; }
  // Written once the resource's daemon answers with its limits set; removed while it is down.
  std::string StartedMarker() const { return ResourceDir() + "/.started"; }
  // The daemon's control socket inside the pipe directory.
  std::string ControlSocket() const { return PipeDir() + "/control"; }
  // Only for a resource: where a claim's clients see the pipe is the DRA plugin's to choose.
  std::string ContainerPipeDir() const {
    return std::string(kMpsContainerRoot) + "/" + resource + "/pipe";
  }
};

// Written once every resource's daemon started; removed on stop.
inline std::string MpsReadyMarker(const std::string& root) { return root + "/.ready"; }
inline std::string MpsShmDir(const std::string& root) { return root + "/shm"; }

}  // namespace gpunode::host
