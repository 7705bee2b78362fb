// The node daemons' TLS (http_client/tls_client.h): each library against the same HTTPS API
// server double, with P-256 and RSA certificates, verifying names and addresses as kubectl does,
// and against Go's crypto/tls with the API server's settings (go_tls_server/); which library a
// context picks; and the switch to OpenSSL for a server that refuses TLS 1.2, the double's and
// Go's.
#include "http_client/tls_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <tuple>

#include "build_paths.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "http_client/http1_connection.h"
#include "process.h"
#include "temp_dir.h"
#include "test_support.h"

namespace gpunode::http_client {
namespace {

using gpunode::testing::ApiServerDouble;
using gpunode::testing::BackgroundProcess;
using gpunode::testing::CertificateKey;
using gpunode::testing::ReadText;
using gpunode::testing::TempDir;

enum class Library { kMbedtls, kOpenssl };

absl::StatusOr<std::shared_ptr<const TlsLibrary>> MakeLibrary(Library library,
                                                              const TlsSettings& settings) {
  return library == Library::kMbedtls ? MakeMbedtlsLibrary(settings) : MakeOpensslLibrary(settings);
}

// A blocking connection to 127.0.0.1:port; the session's calls then never ask to wait.
int Dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  return fd;
}

// The handshake for `server_name`, then one request read to the end of the answer: the answer's
// text, or the first error.
absl::StatusOr<std::string> Fetch(const TlsLibrary& library, int port,
                                  const std::string& server_name) {
  int fd = Dial(port);
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  absl::StatusOr<std::unique_ptr<TlsSession>> session = library.NewSession(fd, server_name);
  if (!session.ok()) return session.status();
  absl::StatusOr<TlsWait> done = (*session)->Handshake();
  if (!done.ok()) return done.status();
  EXPECT_EQ(*done, TlsWait::kNone);
  std::string request =
      "GET /api/v1/nodes HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer double-token\r\n"
      "Connection: close\r\n\r\n";
  size_t written = 0;
  for (std::string_view rest = request; !rest.empty(); rest.remove_prefix(written)) {
    done = (*session)->Write(rest, written);
    if (!done.ok()) return done.status();
  }
  std::string answer;
  while (true) {
    char buffer[4096];
    size_t read = 0;
    done = (*session)->Read(buffer, sizeof buffer, read);
    if (!done.ok()) return done.status();
    if (read == 0) break;
    answer.append(buffer, read);
  }
  (*session)->Close();
  return answer;
}

// tests/cluster/go_tls_server serving `dir`'s tls.crt and tls.key until the test ends.
class GoTlsServer {
 public:
  GoTlsServer(const std::string& dir, bool tls13_only)
      : process_(tls13_only ? std::vector<std::string>{build_paths::kGoTlsServer, dir + "/tls.crt",
                                                       dir + "/tls.key", "tls13-only"}
                            : std::vector<std::string>{build_paths::kGoTlsServer, dir + "/tls.crt",
                                                       dir + "/tls.key"},
                 BackgroundProcess::Options{.stdout_pipe = true}) {
    std::string line;
    if (process_.ReadLine(line)) port_ = std::atoi(line.c_str());
  }
  int port() const { return port_; }  // 0 when it did not start
  std::string log() const { return process_.Stderr(); }

 private:
  BackgroundProcess process_;
  int port_ = 0;
};

class TlsLibraryTest : public ::testing::TestWithParam<std::tuple<Library, CertificateKey>> {
 protected:
  static void SetUpTestSuite() {
    for (CertificateKey key : {CertificateKey::kEcdsaP256, CertificateKey::kRsa}) {
      dirs_[static_cast<int>(key)] = new TempDir();
      ASSERT_TRUE(gpunode::testing::MakeTestCertificates(dir(key), key));
    }
    other_ = new TempDir();
    ASSERT_TRUE(gpunode::testing::MakeTestCertificates(other_->path()));
  }
  static void TearDownTestSuite() {
    for (TempDir*& dir : dirs_) delete std::exchange(dir, nullptr);
    delete std::exchange(other_, nullptr);
  }
  static std::string dir(CertificateKey key) { return dirs_[static_cast<int>(key)]->path(); }

  void SetUp() override {
    ApiServerDouble::Options options;
    options.tls_cert = dir(key()) + "/tls.crt";
    options.tls_key = dir(key()) + "/tls.key";
    server_ = std::make_unique<ApiServerDouble>(options);
    ASSERT_TRUE(server_->Start());
  }

  Library library() const { return std::get<0>(GetParam()); }
  CertificateKey key() const { return std::get<1>(GetParam()); }
  TlsSettings Trusting() const { return {.ca_pem = ReadText(dir(key()) + "/ca.crt")}; }
  std::shared_ptr<const TlsLibrary> Make(const TlsSettings& settings) {
    absl::StatusOr<std::shared_ptr<const TlsLibrary>> made = MakeLibrary(library(), settings);
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? *made : nullptr;
  }

  static TempDir* dirs_[2];
  static TempDir* other_;  // another cluster's CA
  std::unique_ptr<ApiServerDouble> server_;
};

TempDir* TlsLibraryTest::dirs_[2] = {nullptr, nullptr};
TempDir* TlsLibraryTest::other_ = nullptr;

TEST_P(TlsLibraryTest, TalksToTheServerByNameAndByAddress) {
  std::shared_ptr<const TlsLibrary> tls = Make(Trusting());
  ASSERT_NE(tls, nullptr);
  for (const char* name : {"localhost", "127.0.0.1"}) {
    absl::StatusOr<std::string> answer = Fetch(*tls, server_->port(), name);
    ASSERT_TRUE(answer.ok()) << name << ": " << answer.status();
    EXPECT_EQ(answer->rfind("HTTP/1.1 200", 0), 0u) << *answer;
    EXPECT_NE(answer->find("\"items\""), std::string::npos) << *answer;  // the body, to its end
  }
}

TEST_P(TlsLibraryTest, TalksToGosTlsAsTheApiServerConfiguresIt) {
  GoTlsServer go(dir(key()), false);
  ASSERT_NE(go.port(), 0) << go.log();
  std::shared_ptr<const TlsLibrary> tls = Make(Trusting());
  ASSERT_NE(tls, nullptr);
  for (const char* name : {"localhost", "127.0.0.1"}) {
    absl::StatusOr<std::string> answer = Fetch(*tls, go.port(), name);
    ASSERT_TRUE(answer.ok()) << name << ": " << answer.status();
    EXPECT_EQ(answer->rfind("HTTP/1.1 200", 0), 0u) << *answer;
    EXPECT_NE(answer->find("NodeList"), std::string::npos) << *answer;
  }
  absl::StatusOr<std::string> other = Fetch(*tls, go.port(), "api.gpunode.invalid");
  EXPECT_TRUE(absl::IsPermissionDenied(other.status())) << other.status();
}

TEST_P(TlsLibraryTest, RefusesACertificateForAnotherNameOrAddress) {
  std::shared_ptr<const TlsLibrary> tls = Make(Trusting());
  ASSERT_NE(tls, nullptr);
  // The certificate is for localhost and 127.0.0.1; the connection goes to 127.0.0.1 each time.
  for (const char* name : {"api.gpunode.invalid", "127.0.0.2", "::1"}) {
    absl::StatusOr<std::string> answer = Fetch(*tls, server_->port(), name);
    EXPECT_TRUE(absl::IsPermissionDenied(answer.status())) << name << ": " << answer.status();
    EXPECT_NE(std::string(answer.status().message()).find("certificate verify failed"),
              std::string::npos)
        << answer.status();
  }
}

TEST_P(TlsLibraryTest, RefusesAServerSignedByAnotherCa) {
  std::shared_ptr<const TlsLibrary> tls = Make({.ca_pem = ReadText(other_->path() + "/ca.crt")});
  ASSERT_NE(tls, nullptr);
  absl::StatusOr<std::string> answer = Fetch(*tls, server_->port(), "localhost");
  EXPECT_TRUE(absl::IsPermissionDenied(answer.status())) << answer.status();
}

TEST_P(TlsLibraryTest, WithoutVerificationAnyNameIsAccepted) {
  std::shared_ptr<const TlsLibrary> tls = Make({.insecure_skip_verify = true});
  ASSERT_NE(tls, nullptr);
  absl::StatusOr<std::string> answer = Fetch(*tls, server_->port(), "api.gpunode.invalid");
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->rfind("HTTP/1.1 200", 0), 0u);
}

TEST_P(TlsLibraryTest, AClientCertificateMustMatchItsKey) {
  TlsSettings settings = Trusting();
  settings.client_cert_pem = ReadText(dir(key()) + "/tls.crt");
  settings.client_key_pem = ReadText(dir(key()) + "/tls.key");
  ASSERT_NE(Make(settings), nullptr);
  settings.client_key_pem = ReadText(other_->path() + "/tls.key");
  absl::StatusOr<std::shared_ptr<const TlsLibrary>> mismatched = MakeLibrary(library(), settings);
  EXPECT_TRUE(absl::IsInvalidArgument(mismatched.status())) << mismatched.status();
  EXPECT_NE(std::string(mismatched.status().message()).find("does not match"), std::string::npos)
      << mismatched.status();
}

TEST_P(TlsLibraryTest, ACaThatIsNoCertificateIsAnError) {
  absl::StatusOr<std::shared_ptr<const TlsLibrary>> made =
      MakeLibrary(library(), {.ca_pem = "not a certificate\n"});
  EXPECT_TRUE(absl::IsInvalidArgument(made.status())) << made.status();
  EXPECT_NE(std::string(made.status().message()).find("the cluster's certificate authority"),
            std::string::npos)
      << made.status();
}

INSTANTIATE_TEST_SUITE_P(
    Libraries, TlsLibraryTest,
    ::testing::Combine(::testing::Values(Library::kMbedtls, Library::kOpenssl),
                       ::testing::Values(CertificateKey::kEcdsaP256, CertificateKey::kRsa)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) == Library::kMbedtls ? "Mbedtls" : "Openssl") +
             (std::get<1>(info.param) == CertificateKey::kRsa ? "Rsa" : "P256");
    });

class TlsContextTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    ASSERT_TRUE(gpunode::testing::MakeTestCertificates(dir_->path()));
  }
  static void TearDownTestSuite() { delete std::exchange(dir_, nullptr); }
  static std::string Ca() { return ReadText(dir_->path() + "/ca.crt"); }
  static ApiServerDouble::Options Serving() {
    ApiServerDouble::Options options;
    options.tls_cert = dir_->path() + "/tls.crt";
    options.tls_key = dir_->path() + "/tls.key";
    return options;
  }
  static TempDir* dir_;
};

TempDir* TlsContextTest::dir_ = nullptr;

TEST_F(TlsContextTest, PicksMbedtlsUnlessTheSystemTrustStoreIsNeeded) {
  absl::StatusOr<std::shared_ptr<TlsContext>> cluster = TlsContext::Make({.ca_pem = Ca()});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ((*cluster)->library()->name(), "mbedTLS");
  absl::StatusOr<std::shared_ptr<TlsContext>> insecure =
      TlsContext::Make({.insecure_skip_verify = true});
  ASSERT_TRUE(insecure.ok()) << insecure.status();
  EXPECT_EQ((*insecure)->library()->name(), "mbedTLS");
  absl::StatusOr<std::shared_ptr<TlsContext>> system = TlsContext::Make({});
  ASSERT_TRUE(system.ok()) << system.status();
  EXPECT_EQ((*system)->library()->name(), "OpenSSL");
}

TEST_F(TlsContextTest, AClientCertificateMbedtlsCannotReadIsServedByOpenssl) {
  // mbedTLS 2.28 has no Ed25519; OpenSSL, and so the API server's clients, do.
  TempDir ed25519;
  gpunode::testing::ProcessResult made = gpunode::testing::RunProcess(
      {"/bin/sh", "-c",
       "cd '" + ed25519.path() +
           "' && openssl req -x509 -newkey ed25519 -nodes -days 2 -subj /CN=system:node:gpu-a "
           "-keyout client.key -out client.crt"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  TlsSettings settings{.ca_pem = Ca(),
                       .client_cert_pem = ReadText(ed25519.path() + "/client.crt"),
                       .client_key_pem = ReadText(ed25519.path() + "/client.key")};
  EXPECT_FALSE(MakeMbedtlsLibrary(settings).ok());
  absl::StatusOr<std::shared_ptr<TlsContext>> tls = TlsContext::Make(settings);
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_EQ((*tls)->library()->name(), "OpenSSL");

  // A key that matches neither is refused with OpenSSL's words, whichever library tried first.
  settings.client_key_pem = ReadText(dir_->path() + "/tls.key");
  absl::StatusOr<std::shared_ptr<TlsContext>> mismatched = TlsContext::Make(settings);
  EXPECT_TRUE(absl::IsInvalidArgument(mismatched.status())) << mismatched.status();
  EXPECT_NE(std::string(mismatched.status().message()).find("does not match"), std::string::npos)
      << mismatched.status();
}

TEST_F(TlsContextTest, AServerThatRefusesTls12IsReachedThroughOpenssl) {
  ApiServerDouble::Options options = Serving();
  options.tls13_only = true;
  ApiServerDouble server(options);
  ASSERT_TRUE(server.Start());
  absl::StatusOr<std::shared_ptr<TlsContext>> tls = TlsContext::Make({.ca_pem = Ca()});
  ASSERT_TRUE(tls.ok()) << tls.status();
  std::shared_ptr<const TlsLibrary> first = (*tls)->library();
  ASSERT_EQ(first->name(), "mbedTLS");
  absl::StatusOr<std::string> refused = Fetch(*first, server.port(), "localhost");
  EXPECT_TRUE(absl::IsUnimplemented(refused.status())) << refused.status();

  for (int connection = 0; connection < 2; ++connection) {
    absl::StatusOr<std::unique_ptr<Http1Connection>> opened =
        Http1Connection::Open("127.0.0.1", std::to_string(server.port()), *tls, "localhost",
                              absl::Now() + absl::Seconds(10));
    ASSERT_TRUE(opened.ok()) << opened.status();
    EXPECT_EQ((*tls)->library()->name(), "OpenSSL");
    ASSERT_TRUE((*opened)
                    ->WriteAll("GET /api/v1/nodes HTTP/1.1\r\nHost: localhost\r\n"
                               "Authorization: Bearer double-token\r\n\r\n",
                               absl::Now() + absl::Seconds(10))
                    .ok());
    char buffer[64];
    absl::StatusOr<size_t> read =
        (*opened)->Read(buffer, sizeof buffer, absl::Now() + absl::Seconds(10));
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(std::string(buffer, *read).rfind("HTTP/1.1 200", 0), 0u);
  }
  // Go's crypto/tls refuses TLS 1.2 the same way.
  GoTlsServer go(dir_->path(), true);
  ASSERT_NE(go.port(), 0) << go.log();
  absl::StatusOr<std::string> go_refused = Fetch(*first, go.port(), "localhost");
  EXPECT_TRUE(absl::IsUnimplemented(go_refused.status())) << go_refused.status();
  absl::StatusOr<std::string> go_answer = Fetch(*(*tls)->library(), go.port(), "localhost");
  ASSERT_TRUE(go_answer.ok()) << go_answer.status();
  EXPECT_NE(go_answer->find("NodeList"), std::string::npos) << *go_answer;

  // A switch asked for by a connection that used the old library changes nothing more.
  EXPECT_TRUE((*tls)->UseTls13(*first).ok());
  EXPECT_EQ((*tls)->library()->name(), "OpenSSL");
}

}  // namespace
}  // namespace gpunode::http_client
