// The plain HTTP/1.1 server (http/plain_server.h), as http::CreateServer gives it without TLS, on
// a loopback port, spoken to with raw sockets so that every byte of the exchange is the test's:
// routes, HEAD, keep-alive and its limits, pipelining, bodies, the refusals of bad requests,
// timeouts and stopping.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "http/http_module.h"
#include "http/request_head.h"

namespace gpunode::http {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace std::chrono_literals;

// A client connection; every read waits at most `timeout` for the server.
class Client {
 public:
  explicit Client(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // The next response, head and Content-Length body (none for a HEAD request); empty when the
  // connection ended or the server said nothing within `timeout`.
  std::string Response(bool head_only = false, std::chrono::milliseconds timeout = 5s) {
    size_t head_end;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!ReadMore(timeout)) return {};
    }
    head_end += 4;
    size_t length = 0;
    if (size_t at = buffer_.find("Content-Length: "); at != std::string::npos && at < head_end) {
      length = std::stoul(buffer_.substr(at + 16));
    }
    if (head_only || buffer_.starts_with("HTTP/1.1 100")) length = 0;
    while (buffer_.size() < head_end + length) {
      if (!ReadMore(timeout)) return {};
    }
    std::string response = buffer_.substr(0, head_end + length);
    buffer_.erase(0, head_end + length);
    return response;
  }

  // Whether the server closes the connection within `timeout` (having sent nothing more).
  bool ClosedWithin(std::chrono::milliseconds timeout) {
    return !ReadMore(timeout) && buffer_.empty() && ended_;
  }

 private:
  bool ReadMore(std::chrono::milliseconds timeout) {
    pollfd readable = {fd_, POLLIN, 0};
    if (::poll(&readable, 1, static_cast<int>(timeout.count())) <= 0) return false;
    char chunk[65536];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) {
      ended_ = true;
      return false;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_;
  bool connected_ = false;
  bool ended_ = false;
  std::string buffer_;
};

std::string Get(std::string_view path, std::string_view extra = "") {
  return std::string("GET ") + std::string(path) + " HTTP/1.1\r\nHost: test\r\n" +
         std::string(extra) + "\r\n";
}

class PlainServer : public ::testing::Test {
 protected:
  // Starts a server with `options` (on a free loopback port) and the test's routes.
  void Start(ServerOptions options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;
    absl::StatusOr<std::unique_ptr<HttpServer>> server = CreateServer(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    server_->Get("/text", [](const Request& request, Response& response) {
      response.body = "path " + std::string(request.path) + "\n";
    });
    server_->Get("/provided", [this](const Request&, Response& response) {
      response.content_type = "application/octet-stream";
      response.content_length = provided_body_.size();
      // A few bytes per call, so the server must call again with the offsets that are left.
      response.provider = [this](size_t offset, size_t length, const BodyWriter& write) {
        ++provider_calls_;
        return write(provided_body_.data() + offset, std::min<size_t>(length, 70001));
      };
    });
    server_->Get("/throws", [](const Request&, Response&) { throw std::runtime_error("boom"); });
    server_->Post("/echo", [](const Request& request, Response& response) {
      response.status = 201;
      response.body = std::string(request.body);
    });
    ASSERT_TRUE(server_->Bind().ok());
    server_->Start();
  }

  void TearDown() override {
    if (server_ != nullptr) {
      server_->Stop();
      EXPECT_TRUE(server_->Wait());
    }
  }

  std::unique_ptr<HttpServer> server_;
  const std::string provided_body_ = std::string(1 << 20, 'x') + "end";
  std::atomic<int> provider_calls_{0};
};

TEST_F(PlainServer, AnswersRoutesOnOneKeptConnection) {
  Start();
  Client client(server_->port());
  ASSERT_TRUE(client.connected());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.Send(Get("/text?query=ignored")));
    std::string response = client.Response();
    EXPECT_THAT(response, StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_THAT(response, HasSubstr("Content-Length: 11\r\n"));
    EXPECT_THAT(response, HasSubstr("Connection: keep-alive\r\n"));
    EXPECT_THAT(response, HasSubstr("\r\n\r\npath /text\n"));
  }
}

TEST_F(PlainServer, AnswersPipelinedRequestsInOrder) {
  Start();
  Client client(server_->port());
  ASSERT_TRUE(client.Send(Get("/text") + Get("/nothing") + Get("http://test:9400/text")));
  EXPECT_THAT(client.Response(), HasSubstr("path /text\n"));
  // A 404 closes the connection, so the third request is never answered.
  EXPECT_THAT(client.Response(), StartsWith("HTTP/1.1 404 Not Found\r\n"));
  EXPECT_TRUE(client.ClosedWithin(5s));
}

TEST_F(PlainServer, AnAbsoluteTargetIsRoutedByItsPath) {
  Start();
  Client client(server_->port());
  ASSERT_TRUE(client.Send(Get("http://test:9400/text")));
  EXPECT_THAT(client.Response(), HasSubstr("path /text\n"));
}

TEST_F(PlainServer, SendsAProvidedBodyWholeAndHeadWithoutIt) {
  Start();
  Client client(server_->port());
  ASSERT_TRUE(client.Send(Get("/provided")));
  std::string response = client.Response();
  EXPECT_THAT(response, HasSubstr("Content-Length: 1048579\r\n"));
  EXPECT_TRUE(response.ends_with("\r\n\r\n" + provided_body_));
  EXPECT_GT(provider_calls_, 1);

  int calls = provider_calls_;
  ASSERT_TRUE(client.Send("HEAD /provided HTTP/1.1\r\nHost: test\r\n\r\n"));
  response = client.Response(/*head_only=*/true);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(response, HasSubstr("Content-Length: 1048579\r\n"));
  EXPECT_TRUE(response.ends_with("\r\n\r\n"));
  EXPECT_EQ(provider_calls_, calls);
  // Nothing of the body followed: the next answer on the connection is the next request's.
  ASSERT_TRUE(client.Send(Get("/text")));
  EXPECT_THAT(client.Response(), HasSubstr("path /text\n"));
}

TEST_F(PlainServer, UnknownPathsAre404AndOtherMethods405WithAllow) {
  Start();
  Client missing(server_->port());
  ASSERT_TRUE(missing.Send(Get("/missing")));
  std::string response = missing.Response();
  EXPECT_THAT(response, StartsWith("HTTP/1.1 404 Not Found\r\n"));
  EXPECT_THAT(response, HasSubstr("Connection: close\r\n"));
  EXPECT_TRUE(missing.ClosedWithin(5s));

  Client wrong(server_->port());
  ASSERT_TRUE(wrong.Send("DELETE /text HTTP/1.1\r\nHost: test\r\n\r\n"));
  response = wrong.Response();
  EXPECT_THAT(response, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
  EXPECT_THAT(response, HasSubstr("Allow: GET, HEAD\r\n"));

  Client post_only(server_->port());
  ASSERT_TRUE(post_only.Send(Get("/echo")));
  EXPECT_THAT(post_only.Response(), HasSubstr("Allow: POST\r\n"));
}

TEST_F(PlainServer, TakesABodyByContentLengthAndAnswers100Continue) {
  Start();
  Client client(server_->port());
  ASSERT_TRUE(client.Send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nhello"));
  std::string response = client.Response();
  EXPECT_THAT(response, StartsWith("HTTP/1.1 201 "));
  EXPECT_TRUE(response.ends_with("\r\n\r\nhello"));

  // The body is sent only once the server has asked for it.
  ASSERT_TRUE(client.Send(
      "POST /echo HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"));
  EXPECT_EQ(client.Response(), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(client.Send("body"));
  EXPECT_TRUE(client.Response().ends_with("\r\n\r\nbody"));
}

TEST_F(PlainServer, RefusesBodiesOverTheLimitAndChunkedOnes) {
  ServerOptions options;
  options.max_payload_length = 10;
  Start(options);
  Client large(server_->port());
  ASSERT_TRUE(large.Send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 11\r\n\r\n"));
  std::string response = large.Response();
  EXPECT_THAT(response, StartsWith("HTTP/1.1 413 Content Too Large\r\n"));
  EXPECT_THAT(response, HasSubstr("the body is over 10 bytes"));
  EXPECT_TRUE(large.ClosedWithin(5s));

  Client chunked(server_->port());
  ASSERT_TRUE(
      chunked.Send("POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: "
                   "chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"));
  EXPECT_THAT(chunked.Response(), StartsWith("HTTP/1.1 501 Not Implemented\r\n"));
  EXPECT_TRUE(chunked.ClosedWithin(5s));
}

TEST_F(PlainServer, RefusesMalformedHeadsNamingTheProblem) {
  Start();
  struct Case {
    std::string request;
    std::string problem;
  };
  for (const Case& c : std::vector<Case>{
           {"GET /text HTTP/1.1\r\n\r\n", "no Host field"},
           {"GET /text HTTP/2.0\r\nHost: test\r\n\r\n", "the version is not HTTP/1.x"},
           {"GET /text\r\n\r\n", "the request line is not METHOD TARGET HTTP/1.x"},
           {"GET text HTTP/1.1\r\nHost: test\r\n\r\n", "neither a path nor an http URL"},
           {"GET /text HTTP/1.1\r\nHost: test\r\nX-A: 1\r\n folded\r\n\r\n", "a folded header"},
           {"GET /text HTTP/1.1\r\nHost : test\r\n\r\n", "a header name is not a token"},
           {"GET /text HTTP/1.1\r\nHost: test\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "two different Content-Length fields"},
           {"GET /text HTTP/1.1\r\nHost: test\r\nContent-Length: 1\r\nTransfer-Encoding: "
            "chunked\r\n\r\n",
            "both Content-Length and Transfer-Encoding"},
           {"GET /text HTTP/1.1\r\nHost: test\r\nContent-Length: -1\r\n\r\n",
            "Content-Length is not a number"},
           {"GET /text HTTP/1.1\r\nHost: te\rst\r\n\r\n", "a bare CR"},
       }) {
    Client client(server_->port());
    ASSERT_TRUE(client.Send(c.request));
    std::string response = client.Response();
    EXPECT_THAT(response, StartsWith("HTTP/1.1 400 Bad Request\r\n")) << c.request;
    EXPECT_THAT(response, HasSubstr(c.problem)) << c.request;
    EXPECT_TRUE(client.ClosedWithin(5s)) << c.request;
  }
}

TEST_F(PlainServer, RefusesAHeadOver8KiB) {
  Start();
  Client client(server_->port());
  ASSERT_TRUE(client.Send(Get("/text", "X-Big: " + std::string(9000, 'a') + "\r\n")));
  EXPECT_THAT(client.Response(), StartsWith("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
  EXPECT_TRUE(client.ClosedWithin(5s));
}

TEST_F(PlainServer, AHandlerThatThrowsIsA500) {
  Start();
  Client client(server_->port());
  ASSERT_TRUE(client.Send(Get("/throws")));
  std::string response = client.Response();
  EXPECT_THAT(response, StartsWith("HTTP/1.1 500 Internal Server Error\r\n"));
  EXPECT_THAT(response, HasSubstr("boom"));
}

TEST_F(PlainServer, ClosesAsTheClientAndTheVersionAsk) {
  Start();
  Client close(server_->port());
  ASSERT_TRUE(close.Send(Get("/text", "Connection: close\r\n")));
  EXPECT_THAT(close.Response(), HasSubstr("Connection: close\r\n"));
  EXPECT_TRUE(close.ClosedWithin(5s));

  // HTTP/1.0 closes unless the client asks to keep the connection.
  Client old(server_->port());
  ASSERT_TRUE(old.Send("GET /text HTTP/1.0\r\n\r\n"));
  EXPECT_THAT(old.Response(), HasSubstr("Connection: close\r\n"));
  EXPECT_TRUE(old.ClosedWithin(5s));

  Client old_kept(server_->port());
  ASSERT_TRUE(old_kept.Send("GET /text HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  EXPECT_THAT(old_kept.Response(), HasSubstr("Connection: keep-alive\r\n"));
  ASSERT_TRUE(old_kept.Send("GET /text HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  EXPECT_THAT(old_kept.Response(), HasSubstr("path /text"));
}

TEST_F(PlainServer, KeepsAConnectionForAtMostTheCountAndTheTimeout) {
  ServerOptions options;
  options.keep_alive_max_count = 2;
  options.keep_alive_timeout_s = 1;
  Start(options);
  Client counted(server_->port());
  ASSERT_TRUE(counted.Send(Get("/text")));
  EXPECT_THAT(counted.Response(), HasSubstr("Connection: keep-alive\r\nKeep-Alive: timeout=1\r\n"));
  ASSERT_TRUE(counted.Send(Get("/text")));
  EXPECT_THAT(counted.Response(), HasSubstr("Connection: close\r\n"));
  EXPECT_TRUE(counted.ClosedWithin(5s));

  Client idle(server_->port());
  ASSERT_TRUE(idle.Send(Get("/text")));
  EXPECT_THAT(idle.Response(), HasSubstr("path /text"));
  EXPECT_TRUE(idle.ClosedWithin(5s));  // after the 1 s keep-alive timeout, not at once
}

TEST_F(PlainServer, CutsOffAClientThatSendsTooSlowly) {
  ServerOptions options;
  options.read_timeout_s = 1;
  options.keep_alive_timeout_s = 30;
  Start(options);
  Client slow(server_->port());
  // The head's first bytes arrive, the rest never: the request must be whole within 1 s.
  ASSERT_TRUE(slow.Send("GET /text HTTP/1.1\r\nHost:"));
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(slow.ClosedWithin(10s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(PlainServer, StopEndsKeptConnectionsWithoutWaitingForTheirTimeout) {
  ServerOptions options;
  options.keep_alive_timeout_s = 60;
  Start(options);
  Client kept(server_->port());
  ASSERT_TRUE(kept.Send(Get("/text")));
  EXPECT_THAT(kept.Response(), HasSubstr("path /text"));
  server_->Stop();
  std::future<bool> waited = std::async(std::launch::async, [&] { return server_->Wait(); });
  ASSERT_EQ(waited.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(waited.get());
  EXPECT_TRUE(kept.ClosedWithin(5s));
  server_.reset();
}

TEST_F(PlainServer, AStopBeforeStartIsNotLost) {
  ServerOptions options;
  options.host = "127.0.0.1";
  absl::StatusOr<std::unique_ptr<HttpServer>> server = CreateServer(options);
  ASSERT_TRUE(server.ok());
  ASSERT_TRUE((*server)->Bind().ok());
  (*server)->Stop();
  (*server)->Start();
  std::future<bool> waited = std::async(std::launch::async, [&] { return (*server)->Wait(); });
  EXPECT_EQ(waited.wait_for(10s), std::future_status::ready);
}

TEST_F(PlainServer, APortInUseIsAnError) {
  Start();
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = server_->port();
  absl::StatusOr<std::unique_ptr<HttpServer>> second = CreateServer(options);
  ASSERT_TRUE(second.ok());
  Result bound = (*second)->Bind();
  EXPECT_EQ(bound.error, ErrorKind::kUnavailable);
  EXPECT_EQ(bound.message, "Address already in use");
}

TEST_F(PlainServer, ConnectionsBeyondTheWorkersWaitTheirTurn) {
  ServerOptions options;
  options.worker_threads = 1;
  options.keep_alive_timeout_s = 1;
  Start(options);
  Client first(server_->port());
  ASSERT_TRUE(first.Send(Get("/text")));
  EXPECT_THAT(first.Response(), HasSubstr("path /text"));
  // The one worker keeps `first` for up to a second; `second` is answered after it.
  Client second(server_->port());
  ASSERT_TRUE(second.Send(Get("/text")));
  EXPECT_THAT(second.Response(false, 10s), HasSubstr("path /text"));
}

TEST(RequestHead, ReadsTheRequestLineAndTheFieldsItActsOn) {
  std::string bytes =
      "\r\nPOST /a/b?c=d HTTP/1.0\nhost: x\nCONTENT-LENGTH:  3 \nConnection: Upgrade, "
      "Keep-Alive\nExpect: 100-Continue\n\nabcGET";
  HeadResult parsed = ParseRequestHead(bytes, 8192);
  ASSERT_EQ(parsed.outcome, HeadOutcome::kParsed);
  EXPECT_EQ(parsed.head.method, "POST");
  EXPECT_EQ(parsed.head.path, "/a/b");
  EXPECT_EQ(parsed.head.minor_version, 0);
  EXPECT_EQ(parsed.head.content_length, 3u);
  EXPECT_TRUE(parsed.head.connection_keep_alive);
  EXPECT_FALSE(parsed.head.connection_close);
  EXPECT_TRUE(parsed.head.expect_continue);
  EXPECT_EQ(bytes.substr(parsed.head.head_bytes), "abcGET");
}

TEST(RequestHead, WaitsForTheBlankLineUpToTheLimit) {
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nHost: x\r\n", 8192).outcome,
            HeadOutcome::kIncomplete);
  EXPECT_EQ(ParseRequestHead(std::string(100, 'a'), 100).outcome, HeadOutcome::kTooLarge);
  // A blank line past the limit does not make the head acceptable.
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 20).outcome,
            HeadOutcome::kTooLarge);
}

}  // namespace
}  // namespace gpunode::http
