// A real Kubernetes control plane for a test: scripts/local-cluster.sh's etcd, kube-apiserver,
// kube-scheduler and kube-controller-manager on loopback, stopped when the object goes. The
// components come from scripts/build-k8s.sh's cache; without them the cluster is not started and
// `missing()` says why, so that a test can skip with that reason.
#pragma once

#include <string>
#include <vector>

#include "process.h"
#include "temp_dir.h"

namespace gpunode::testing {

class LocalCluster {
 public:
  // Starts the cluster; on failure `error()` holds the script's output (the end of the log of
  // the component that failed).
  LocalCluster();
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // Why no cluster could be started because the components are not built; empty otherwise.
  const std::string& missing() const { return missing_; }
  // Why starting failed; empty when the cluster runs.
  const std::string& error() const { return error_; }
  bool running() const { return missing_.empty() && error_.empty(); }

  const std::string& dir() const { return dir_.path(); }
  std::string admin_kubeconfig() const { return dir_.path() + "/admin.kubeconfig"; }
  std::string kubectl() const { return bin_ + "/kubectl"; }
  const std::string& server() const { return server_; }

  // kubectl as cluster-admin.
  ProcessResult Kubectl(const std::vector<std::string>& args, const std::string& input = "") const;
  // A kubeconfig that authenticates as ServiceAccount `ns`/`name` with a token the apiserver
  // issued (the ServiceAccount must exist).
  std::string ServiceAccountKubeconfig(const std::string& ns, const std::string& name) const;

 private:
  TempDir dir_{"gpunode-k8s"};
  std::string bin_;
  std::string server_;
  std::string missing_;
  std::string error_;
};

}  // namespace gpunode::testing
