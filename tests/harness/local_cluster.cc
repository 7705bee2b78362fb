#include "local_cluster.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "build_paths.h"

namespace gpunode::testing {
namespace {

std::string Script() { return std::string(build_paths::kSourceDir) + "/scripts/local-cluster.sh"; }

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return Trimmed(text.str());
}

}  // namespace

bool AwaitCluster(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  std::chrono::milliseconds pause(50);
  while (!done()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  }
  return true;
}

LocalCluster::LocalCluster() {
  ProcessResult where = RunProcess(
      {"/bin/bash", std::string(build_paths::kSourceDir) + "/scripts/build-k8s.sh", "--print-dir"});
  bin_ = Trimmed(where.out);
  if (where.exit_code != 0 || !std::filesystem::exists(bin_ + "/kube-apiserver")) {
    missing_ = "the Kubernetes components are not built (" + bin_ +
               "): run scripts/build-k8s.sh (scripts/install-deps.sh does)";
    return;
  }
  ProcessResult up = RunProcess({"/bin/bash", Script(), "up", dir_.path()});
  if (up.exit_code != 0) {
    error_ = "scripts/local-cluster.sh up failed (exit " + std::to_string(up.exit_code) + "):\n" +
             up.err;
    return;
  }
  server_ = ReadFile(dir_.path() + "/server");
  // Every kubectl this process starts, the documented lines included, keeps its discovery cache
  // with the cluster, which goes with it, not under $HOME, where each cluster (a port of its own)
  // would leave one behind.
  ::setenv("KUBECACHEDIR", (dir_.path() + "/kube-cache").c_str(), 1);
}

LocalCluster::~LocalCluster() {
  if (missing_.empty()) RunProcess({"/bin/bash", Script(), "down", dir_.path()});
}

bool LocalCluster::StartNode(const std::string& gpunode_build) {
  if (!running()) return false;
  std::vector<std::string> env;
  if (!gpunode_build.empty()) env.push_back("GPUNODE_BUILD_DIR=" + gpunode_build);
  ProcessResult node = RunProcess({"/bin/bash", Script(), "node", dir_.path()}, env);
  constexpr int kCannotRunHere = 3;  // the script's exit code for a missing privilege or program
  if (node.exit_code == kCannotRunHere) {
    node_missing_ = Trimmed(node.err);
  } else if (node.exit_code != 0) {
    error_ = "scripts/local-cluster.sh node failed (exit " + std::to_string(node.exit_code) +
             "):\n" + node.err;
  }
  return node.exit_code == 0;
}

bool LocalCluster::RestartKubelet() {
  ProcessResult r = RunProcess({"/bin/bash", Script(), "restart-kubelet", dir_.path()});
  if (r.exit_code != 0) error_ = "scripts/local-cluster.sh restart-kubelet failed:\n" + r.err;
  return r.exit_code == 0;
}

bool LocalCluster::ShareMount(const std::string& path) {
  ProcessResult r = RunProcess({"/bin/bash", Script(), "shared-mount", dir_.path(), path});
  if (r.exit_code != 0) error_ = "scripts/local-cluster.sh shared-mount failed:\n" + r.err;
  return r.exit_code == 0;
}

std::string LocalCluster::node_name() const { return ReadFile(dir_.path() + "/node/name"); }

ProcessResult LocalCluster::Kubectl(const std::vector<std::string>& args,
                                    const std::string& input) const {
  std::vector<std::string> argv = {kubectl(), "--kubeconfig", admin_kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, {}, input);
}

std::string LocalCluster::ServiceAccountKubeconfig(const std::string& ns,
                                                   const std::string& name) const {
  ProcessResult r = RunProcess({"/bin/bash", Script(), "token", dir_.path(), ns, name});
  return r.exit_code == 0 ? Trimmed(r.out) : "";
}

}  // namespace gpunode::testing
