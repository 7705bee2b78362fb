// Shared by the cluster tests: a throwaway CA and server certificate, and kubeconfig files
// pointing at the API server double.
#pragma once

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "kube/client.h"
#include "temp_dir.h"

namespace gpunode::testing {

// ca.crt, tls.crt (signed by the CA, for localhost and 127.0.0.1) and tls.key under `dir`,
// made with the openssl command, with P-256 keys or RSA 2048 ones (kubeadm's). Returns false (and
// prints why) on failure.
enum class CertificateKey { kEcdsaP256, kRsa };
bool MakeTestCertificates(const std::string& dir, CertificateKey key = CertificateKey::kEcdsaP256);

std::string ReadText(const std::string& path);
inline std::string StatusMessage(const absl::Status& status) {
  return std::string(status.message());
}
std::string Base64(const std::string& data);

// A kubeconfig whose current context points at `server` with bearer `token`, trusting the CA
// at `ca_path` (embedded as certificate-authority-data).
std::string KubeconfigYaml(const std::string& server, const std::string& ca_path,
                           const std::string& token, const std::string& ns = "default");

// The API server double over plain HTTP without authentication, started (null, with the failure
// reported, if it cannot be), and an API client for it with the default retries: what the
// in-process tests of the cluster commands talk to.
std::unique_ptr<ApiServerDouble> StartPlainApiServer();
// The client waits between retries on `env`, which outlives it.
std::unique_ptr<kube::Client> ClientFor(const ApiServerDouble& server, core::Env& env);

// The API server double over TLS with a bearer token: certificates made once per suite under
// dir_, a fresh server per test.
class TlsApiServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;

  static TempDir* dir_;
  std::unique_ptr<ApiServerDouble> server_;
};

}  // namespace gpunode::testing
