// A real Kubernetes control plane for a test: scripts/local-cluster.sh's etcd, kube-apiserver,
// kube-scheduler and kube-controller-manager on loopback, and on request a node (the real kubelet
// with Debian's containerd), all stopped when the object goes. The components come from
// scripts/build-k8s.sh's cache; without them the cluster is not started and `missing()` says why,
// so that a test can skip with that reason.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "process.h"
#include "temp_dir.h"

namespace gpunode::testing {

// Calls `done` until it holds or `limit` has passed; whether it held. For what only a read of the
// cluster can tell (kubectl get): the pause between reads doubles from 50 ms up to 1 s, since one
// kubectl run costs about a tenth of a CPU-second (Go's start, the TLS handshake), and reads every
// 100 ms through the kubelet's 10-second status period would cost a CPU-second per wait.
bool AwaitCluster(const std::function<bool()>& done, std::chrono::milliseconds limit);

class LocalCluster {
 public:
  // Starts the cluster; on failure `error()` holds the script's output (the end of the log of
  // the component that failed). Sets KUBECACHEDIR for the process (kubectl's discovery cache in
  // the cluster's directory): construct it before starting threads.
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

  // Adds the node (scripts/local-cluster.sh node). False when it did not start: `node_missing()`
  // says which privilege or program this machine lacks (a test skips with it), else `error()`
  // holds the end of the failed component's log. With `gpunode_build`, the directory of a
  // gpunode binary and its simulator, the node also gets the `nvidia` runtime handler of its
  // simulated GPUs and gpunode's image (kGpunodeImage).
  bool StartNode(const std::string& gpunode_build = "");
  const std::string& node_missing() const { return node_missing_; }
  // Stops the kubelet and starts it again with the same configuration; false with `error()` set
  // when it did not come back healthy.
  bool RestartKubelet();
  // Makes `path` (made when missing) a shared mount in the node's mount namespace, as a systemd
  // host's / is, so that a pod's Bidirectional mount under it reaches the node; false with
  // `error()` set when it could not.
  bool ShareMount(const std::string& path);
  std::string node_name() const;
  // The node's kubelet root (its /var/lib/kubelet), seen from outside its mount namespace.
  std::string kubelet_root() const { return dir_.path() + "/node/kubelet"; }
  std::string device_plugin_dir() const { return kubelet_root() + "/device-plugins"; }
  std::string pod_resources_socket() const {
    return kubelet_root() + "/pod-resources/kubelet.sock";
  }
  std::string containerd_socket() const { return dir_.path() + "/node/containerd/containerd.sock"; }
  // The image the node's pods can run without a registry: a static program that waits for
  // SIGTERM (tests/k8s/pause), also the pods' sandbox.
  static constexpr char kLocalImage[] = "gpunode.local/pause:1";
  // deploy/'s image of gpunode, made from `gpunode_build` (StartNode): the binary, the simulator
  // and the shared libraries they load, and /pause to keep a pod running.
  static constexpr char kGpunodeImage[] = "ghcr.io/gpunode/gpunode:0.1.0";
  // The simulated driver's device nodes: a device plugin with --dev-root here and
  // --pass-device-specs hands GPUs to the pods of RuntimeClass nvidia.
  std::string driver_dir() const { return dir_.path() + "/node/driver"; }

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
  std::string node_missing_;
  std::string error_;
};

}  // namespace gpunode::testing
