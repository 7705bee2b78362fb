#include "plugin/mps/mps_allocation.h"

#include "host/mps_paths.h"

namespace gpunode::plugin {

void AddMpsClient(const std::string& mps_root, const Resource& resource,
                  v1beta1::ContainerAllocateResponse& response) {
  host::MpsPaths paths{mps_root, resource.name};
  (*response.mutable_envs())["CUDA_MPS_PIPE_DIRECTORY"] = paths.ContainerPipeDir();
  v1beta1::Mount* pipe = response.add_mounts();
  pipe->set_container_path(paths.ContainerPipeDir());
  pipe->set_host_path(paths.PipeDir());
  v1beta1::Mount* shm = response.add_mounts();
  shm->set_container_path("/dev/shm");
  shm->set_host_path(host::MpsShmDir(mps_root));
}

}  // namespace gpunode::plugin
