#include "kube/kubeconfig.h"

#include "gtest/gtest.h"
#include "temp_dir.h"
#include "test_support.h"

namespace gpunode::kube {
namespace {

using gpunode::testing::Base64;
using gpunode::testing::TempDir;

TEST(KubeconfigTest, TokenAndCaDataFromTheCurrentContext) {
  std::string yaml = R"(apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: )" +
                     Base64("CA PEM") + R"(
    tls-server-name: kubernetes.default
- name: lab
  cluster:
    server: https://lab:6443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: s3cret
contexts:
- name: prod
  context: {cluster: prod, user: admin, namespace: ml}
- name: lab
  context: {cluster: lab, user: admin}
current-context: prod
)";
  absl::StatusOr<ClusterAccess> a = ParseKubeconfig({{"/home/u/.kube/config", yaml}}, "");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->server, "https://10.0.0.1:6443");
  EXPECT_EQ(a->ca_pem, "CA PEM");
  EXPECT_EQ(a->token, "s3cret");
  EXPECT_EQ(a->default_namespace, "ml");
  EXPECT_EQ(a->tls_server_name, "kubernetes.default");
  EXPECT_FALSE(a->insecure_skip_tls_verify);
  // The description names the context and file, never the secret.
  EXPECT_EQ(a->description.find("s3cret"), std::string::npos);

  absl::StatusOr<ClusterAccess> lab = ParseKubeconfig({{"/k", yaml}}, "lab");
  ASSERT_TRUE(lab.ok()) << lab.status();
  EXPECT_TRUE(lab->insecure_skip_tls_verify);
  EXPECT_EQ(lab->default_namespace, "default");
}

TEST(KubeconfigTest, ClientCertificateFilesResolveAgainstTheKubeconfigDirectory) {
  TempDir dir;
  dir.Write("client.crt", "CERT");
  dir.Write("client.key", "KEY");
  dir.Write("ca.crt", "CA");
  std::string yaml = R"(clusters:
- name: c
  cluster: {server: "https://k:6443", certificate-authority: ca.crt}
users:
- name: u
  user: {client-certificate: client.crt, client-key: client.key}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
)";
  absl::StatusOr<ClusterAccess> a = ParseKubeconfig({{dir.path() + "/config", yaml}}, "");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->client_cert_pem, "CERT");
  EXPECT_EQ(a->client_key_pem, "KEY");
  EXPECT_EQ(a->ca_pem, "CA");
}

TEST(KubeconfigTest, MergesFilesWithTheFirstWinning) {
  std::string first = "current-context: b\nusers:\n- name: u\n  user: {token: one}\n";
  std::string second = R"(current-context: a
clusters:
- name: c
  cluster: {server: "https://k:6443"}
users:
- name: u
  user: {token: two}
contexts:
- name: b
  context: {cluster: c, user: u}
)";
  absl::StatusOr<ClusterAccess> a = ParseKubeconfig({{"/1", first}, {"/2", second}}, "");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->token, "one");
}

TEST(KubeconfigTest, ErrorsNameTheFileTheContextAndTheField) {
  std::string yaml = R"(clusters:
- name: c
  cluster: {server: "https://k:6443", certificate-authority-data: "%%%"}
users:
- name: u
  user: {exec: {command: aws, args: [eks, get-token],
               apiVersion: client.authentication.k8s.io/v1beta1}}
contexts:
- name: x
  context: {cluster: c, user: u}
- name: y
  context: {cluster: missing, user: u}
current-context: x
)";
  absl::StatusOr<ClusterAccess> bad_ca = ParseKubeconfig({{"/k", yaml}}, "");
  ASSERT_FALSE(bad_ca.ok());
  EXPECT_NE(testing::StatusMessage(bad_ca.status())
                .find("kubeconfig /k: context \"x\": cluster \"c\": "
                      "certificate-authority-data: not valid base64"),
            std::string::npos)
      << bad_ca.status();
  absl::StatusOr<ClusterAccess> missing = ParseKubeconfig({{"/k", yaml}}, "y");
  EXPECT_NE(testing::StatusMessage(missing.status()).find("cluster \"missing\" is not defined"),
            std::string::npos);
  absl::StatusOr<ClusterAccess> nope = ParseKubeconfig({{"/k", yaml}}, "nope");
  EXPECT_NE(testing::StatusMessage(nope.status()).find("context \"nope\" not found"),
            std::string::npos);

  std::string exec_only = R"(clusters:
- name: c
  cluster: {server: "https://k:6443"}
users:
- name: u
  user: {exec: {command: aws}}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
)";
  absl::StatusOr<ClusterAccess> exec = ParseKubeconfig({{"/k", exec_only}}, "");
  ASSERT_FALSE(exec.ok());
  EXPECT_NE(testing::StatusMessage(exec.status())
                .find("exec.apiVersion \"\" is not supported; use client.authentication.k8s.io/v1"),
            std::string::npos)
      << exec.status();

  absl::StatusOr<ClusterAccess> broken = ParseKubeconfig({{"/k", "clusters: [\n  - {"}}, "");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(testing::StatusMessage(broken.status()).find("kubeconfig /k: line"), std::string::npos);
  absl::StatusOr<ClusterAccess> wrong = ParseKubeconfig({{"/k", "clusters: 3\n"}}, "");
  EXPECT_NE(testing::StatusMessage(wrong.status()).find("clusters must be a list"),
            std::string::npos);
}

TEST(KubeconfigTest, ExecPluginsAreReadAsClientGoReadsThem) {
  std::string yaml = R"(clusters:
- name: c
  cluster: {server: "https://k:6443"}
users:
- name: eks
  user:
    token: ignored-when-a-plugin-is-set
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: bin/get-token
      args: [--cluster, prod]
      env: [{name: AWS_PROFILE, value: ml}]
      installHint: install the token helper
      provideClusterInfo: true
      interactiveMode: IfAvailable
- name: path
  user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws}}
- name: tty
  user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, interactiveMode: Always}}
contexts:
- {name: eks, context: {cluster: c, user: eks}}
- {name: path, context: {cluster: c, user: path}}
- {name: tty, context: {cluster: c, user: tty}}
current-context: eks
)";
  absl::StatusOr<ClusterAccess> tty = ParseKubeconfig({{"/home/u/.kube/config", yaml}}, "tty");
  ASSERT_FALSE(tty.ok());
  EXPECT_NE(testing::StatusMessage(tty.status())
                .find("user \"tty\": exec.interactiveMode Always needs a terminal"),
            std::string::npos)
      << tty.status();

  // Another user's plugin that cannot run does not stand in the way.
  absl::StatusOr<ClusterAccess> eks = ParseKubeconfig({{"/home/u/.kube/config", yaml}}, "eks");
  ASSERT_TRUE(eks.ok()) << eks.status();
  ASSERT_TRUE(eks->exec.has_value());
  EXPECT_EQ(eks->exec->command, "/home/u/.kube/bin/get-token");  // relative to the kubeconfig
  EXPECT_EQ(eks->exec->args, (std::vector<std::string>{"--cluster", "prod"}));
  ASSERT_EQ(eks->exec->env.size(), 1u);
  EXPECT_EQ(eks->exec->env[0].first, "AWS_PROFILE");
  EXPECT_EQ(eks->exec->env[0].second, "ml");
  EXPECT_EQ(eks->exec->api_version, "client.authentication.k8s.io/v1");
  EXPECT_EQ(eks->exec->install_hint, "install the token helper");
  EXPECT_TRUE(eks->exec->provide_cluster_info);
  EXPECT_NE(eks->exec->where.find("user \"eks\""), std::string::npos);

  absl::StatusOr<ClusterAccess> path = ParseKubeconfig({{"/home/u/.kube/config", yaml}}, "path");
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->exec->command, "aws");  // a bare name is looked up on PATH
}

TEST(KubeconfigTest, InClusterServiceAccount) {
  TempDir dir;
  dir.Write("token", "sa-token\n");
  dir.Write("ca.crt", "SA CA");
  dir.Write("namespace", "gpu-operator");
  AccessSources s;
  s.service_host = "10.96.0.1";
  s.service_port = "443";
  s.service_account_dir = dir.path();
  absl::StatusOr<ClusterAccess> a = ResolveAccess(s);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->server, "https://10.96.0.1:443");
  EXPECT_EQ(a->ca_pem, "SA CA");
  EXPECT_EQ(a->token_file, dir.path() + "/token");
  EXPECT_EQ(a->default_namespace, "gpu-operator");

  s.service_host = "fd00::1";
  absl::StatusOr<ClusterAccess> v6 = ResolveAccess(s);
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");
}

TEST(KubeconfigTest, ResolutionOrderFollowsKubectl) {
  TempDir dir;
  std::string cfg =
      "clusters:\n- name: c\n  cluster: {server: \"https://from-env:6443\"}\n"
      "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n";
  std::string env_file = dir.Write("env-config", cfg);
  AccessSources s;
  s.kubeconfig_env = "/does/not/exist:" + env_file;
  s.service_host = "10.96.0.1";  // a kubeconfig wins over the service account
  s.service_port = "443";
  absl::StatusOr<ClusterAccess> a = ResolveAccess(s);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->server, "https://from-env:6443");

  AccessSources none;
  absl::StatusOr<ClusterAccess> missing = ResolveAccess(none);
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  // The flags that give one are the command's to name (cli::AppendHint), not this layer's.
  EXPECT_EQ(testing::StatusMessage(missing.status()),
            "no kubeconfig ($KUBECONFIG, ~/.kube/config) and not running in a pod");
}

}  // namespace
}  // namespace gpunode::kube
