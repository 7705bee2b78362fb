#include "test_support.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "build_paths.h"
#include "process.h"

namespace gpunode::testing {

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Base64(const std::string& data) { return absl::Base64Escape(data); }

bool MakeTestCertificates(const std::string& dir, CertificateKey key) {
  std::string ext = dir + "/ext.cnf";
  std::ofstream(ext) << "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                        "basicConstraints=CA:FALSE\n"
                        "keyUsage=digitalSignature,keyEncipherment\n"
                        "extendedKeyUsage=serverAuth\n";
  // A P-256 key is made in no time; the RSA keys come from the build tree (CMakeLists.txt).
  std::string keys =
      key == CertificateKey::kRsa
          ? std::string("cp '") + build_paths::kRsaTestKeys + "/ca.key' '" +
                build_paths::kRsaTestKeys + "/tls.key' .; "
          : "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out ca.key; "
            "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out tls.key; ";
  std::string script =
      "set -e; cd '" + dir + "'; " + keys +
      "openssl req -x509 -key ca.key -out ca.crt -days 2 -subj /CN=gpunode-test-ca; "
      "openssl req -new -key tls.key -out tls.csr -subj /CN=localhost; "
      "openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out tls.crt "
      "-days 2 -extfile ext.cnf";
  ProcessResult r = RunProcess({"/bin/sh", "-c", script});
  if (r.exit_code != 0) std::cerr << "openssl failed: " << r.err << "\n";
  return r.exit_code == 0;
}

std::string KubeconfigYaml(const std::string& server, const std::string& ca_path,
                           const std::string& token, const std::string& ns) {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "clusters:\n"
         "- name: double\n"
         "  cluster:\n"
         "    server: " +
         server +
         "\n"
         "    certificate-authority-data: " +
         Base64(ReadText(ca_path)) +
         "\n"
         "users:\n"
         "- name: tester\n"
         "  user:\n"
         "    token: " +
         token +
         "\n"
         "contexts:\n"
         "- name: double\n"
         "  context:\n"
         "    cluster: double\n"
         "    user: tester\n"
         "    namespace: " +
         ns +
         "\n"
         "current-context: double\n";
}

TempDir* TlsApiServerTest::dir_ = nullptr;

void TlsApiServerTest::SetUpTestSuite() {
  dir_ = new TempDir();
  ASSERT_TRUE(MakeTestCertificates(dir_->path()));
}

void TlsApiServerTest::TearDownTestSuite() {
  delete dir_;
  dir_ = nullptr;
}

void TlsApiServerTest::SetUp() {
  ApiServerDouble::Options options;
  options.tls_cert = dir_->path() + "/tls.crt";
  options.tls_key = dir_->path() + "/tls.key";
  server_ = std::make_unique<ApiServerDouble>(options);
  ASSERT_TRUE(server_->Start());
}

std::unique_ptr<ApiServerDouble> StartPlainApiServer() {
  ApiServerDouble::Options options;
  options.token = "";
  auto server = std::make_unique<ApiServerDouble>(options);
  if (!server->Start()) {
    ADD_FAILURE() << "the API server double did not start";
    return nullptr;
  }
  return server;
}

std::unique_ptr<kube::Client> ClientFor(const ApiServerDouble& server, core::Env& env) {
  kube::ClusterAccess access;
  access.server = server.url();
  access.description = "double";
  absl::StatusOr<std::unique_ptr<kube::Client>> client =
      kube::NewClient(access, kube::TransportOptions{}, env);
  if (!client.ok()) {
    ADD_FAILURE() << client.status();
    return nullptr;
  }
  return std::move(*client);
}

}  // namespace gpunode::testing
