// Shared by the tests that run the real binary's cluster commands: the binary, the fixtures, and
// the API server double reached through a kubeconfig file.
#pragma once

#include <string>
#include <vector>

#include "build_paths.h"
#include "cluster_fixture.h"
#include "process.h"
#include "test_support.h"

namespace gpunode::testing {

inline const std::string kGpunodeBinary = build_paths::kBinary;

inline ProcessResult Gpunode(std::vector<std::string> args) {
  args.insert(args.begin(), kGpunodeBinary);
  return RunProcess(args);
}

// The binary against the API server double over TLS with a bearer token, via a kubeconfig file.
class LiveApiServerTest : public TlsApiServerTest {
 protected:
  void SetUp() override {
    TlsApiServerTest::SetUp();
    if (HasFatalFailure()) return;
    kubeconfig_ =
        dir_->Write("kubeconfig-" + std::to_string(server_->port()),
                    KubeconfigYaml(server_->url(), dir_->path() + "/ca.crt", "double-token", "ml"));
  }
  ProcessResult Live(std::vector<std::string> args) {
    args.push_back("--kubeconfig");
    args.push_back(kubeconfig_);
    return Gpunode(args);
  }

  std::string kubeconfig_;
};

}  // namespace gpunode::testing
