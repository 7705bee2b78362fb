// The node daemons' HTTP/1.1 transport on the wire: a watch streamed over TLS and stopped, and
// against a scripted server, framing, connection reuse, truncated and malformed answers, and the
// request it writes. (The Client's behaviour over it, retries and timeouts included, is tested by
// the ClientTest suite in client_test.cc, which runs over both transports.)
#include "kube/http1_transport.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>

#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "temp_dir.h"
#include "test_support.h"

namespace gpunode::kube {
namespace {

using gpunode::testing::ApiServerDouble;

// A plain-HTTP server that answers each request with the next scripted reply, byte for byte,
// closing the connection after a reply that says so. It records every request head and counts
// the connections it accepted.
class ScriptedServer {
 public:
  struct Reply {
    std::string bytes;
    bool close = false;
  };

  explicit ScriptedServer(std::vector<Reply> replies) : replies_(std::move(replies)) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&address), length), 0);
    EXPECT_EQ(listen(listener_, 4), 0);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    shutdown(listener_, SHUT_RDWR);
    thread_.join();
    close(listener_);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_; }
  std::vector<std::string> heads() {
    std::lock_guard<std::mutex> lock(mu_);
    return heads_;
  }

 private:
  void Serve() {
    size_t next = 0;
    while (next < replies_.size()) {
      int fd = accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      ++connections_;
      std::string in;
      while (next < replies_.size()) {
        size_t end;
        while ((end = in.find("\r\n\r\n")) == std::string::npos) {
          char buffer[4096];
          ssize_t n = read(fd, buffer, sizeof buffer);
          if (n <= 0) break;
          in.append(buffer, static_cast<size_t>(n));
        }
        if (end == std::string::npos) break;  // the client closed this connection
        {
          std::lock_guard<std::mutex> lock(mu_);
          heads_.push_back(in.substr(0, end + 4));
        }
        in.erase(0, end + 4);
        const Reply& reply = replies_[next++];
        EXPECT_EQ(write(fd, reply.bytes.data(), reply.bytes.size()),
                  static_cast<ssize_t>(reply.bytes.size()));
        if (reply.close) break;
      }
      close(fd);
    }
  }

  std::vector<Reply> replies_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::vector<std::string> heads_;
  std::thread thread_;
};

ClusterAccess PlainAccess(const std::string& url) {
  ClusterAccess a;
  a.server = url;
  a.token = "plain-token";
  a.description = "scripted";
  return a;
}

std::unique_ptr<HttpTransport> Transport(const ClusterAccess& access,
                                         absl::Duration timeout = absl::Seconds(5)) {
  TransportOptions options;
  options.request_timeout = timeout;
  absl::StatusOr<std::unique_ptr<HttpTransport>> t = NewHttp1Transport(access, options);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(*t) : nullptr;
}

HttpRequest Get(const std::string& path) {
  HttpRequest r;
  r.path = path;
  return r;
}

TEST(Http1Transport, WritesTheRequestCurlWouldAndReusesTheConnection) {
  ScriptedServer server({{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"},
                         {"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n"}});
  std::unique_ptr<HttpTransport> t = Transport(PlainAccess(server.url() + "/prefix/"));
  absl::StatusOr<HttpResponse> first = t->Send(Get("/api/v1/nodes/gpu-a"));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->body, "{}");
  HttpRequest post;
  post.method = "POST";
  post.path = "/api/v1/namespaces/default/events";
  post.content_type = "application/json";
  post.body = "{\"kind\":\"Event\"}";
  absl::StatusOr<HttpResponse> second = t->Send(post);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->status, 201);
  EXPECT_EQ(second->body, "{\"a\":1}");
  EXPECT_EQ(server.connections(), 1);
  std::vector<std::string> heads = server.heads();
  ASSERT_EQ(heads.size(), 2u);
  EXPECT_EQ(heads[0].substr(0, heads[0].find("\r\n")), "GET /prefix/api/v1/nodes/gpu-a HTTP/1.1");
  EXPECT_NE(heads[0].find("\r\nHost: 127.0.0.1:"), std::string::npos);
  EXPECT_NE(heads[0].find("\r\nAuthorization: Bearer plain-token\r\n"), std::string::npos);
  EXPECT_NE(heads[0].find("\r\nAccept: application/json\r\n"), std::string::npos);
  EXPECT_NE(heads[1].find("\r\nContent-Type: application/json\r\n"), std::string::npos);
  EXPECT_NE(heads[1].find("\r\nContent-Length: 16\r\n"), std::string::npos);
}

TEST(Http1Transport, BasicAuthenticationWithoutAToken) {
  ScriptedServer server({{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"}});
  ClusterAccess access = PlainAccess(server.url());
  access.token.clear();
  access.username = "admin";
  access.password = "secret";
  ASSERT_TRUE(Transport(access)->Send(Get("/api")).ok());
  EXPECT_NE(server.heads().at(0).find("\r\nAuthorization: Basic YWRtaW46c2VjcmV0\r\n"),
            std::string::npos);
}

TEST(Http1Transport, TheTokenFileIsReadAndItsAbsenceIsUnauthenticated) {
  gpunode::testing::TempDir dir;
  std::string token = dir.Write("token", "projected-token\n");
  ScriptedServer server({{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"}});
  ClusterAccess access = PlainAccess(server.url());
  access.token.clear();
  access.token_file = token;
  ASSERT_TRUE(Transport(access)->Send(Get("/api")).ok());
  EXPECT_NE(server.heads().at(0).find("\r\nAuthorization: Bearer projected-token\r\n"),
            std::string::npos);

  access.token_file = dir.path() + "/missing";
  absl::StatusOr<HttpResponse> r = Transport(access)->Send(Get("/api"));
  EXPECT_TRUE(absl::IsUnauthenticated(r.status())) << r.status();
  EXPECT_NE(std::string(r.status().message()).find("token file:"), std::string::npos);
}

TEST(Http1Transport, AClosedKeptConnectionIsReplacedOnce) {
  // The server answers, keeps nothing open, and the next request must find a new connection.
  ScriptedServer server({{"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na", /*close=*/true},
                         {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"}});
  std::unique_ptr<HttpTransport> t = Transport(PlainAccess(server.url()));
  ASSERT_TRUE(t->Send(Get("/a")).ok());
  absl::StatusOr<HttpResponse> second = t->Send(Get("/b"));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->body, "b");
  EXPECT_EQ(server.connections(), 2);
}

TEST(Http1Transport, AServerThatClosesMidBodyIsAnError) {
  ScriptedServer server(
      {{"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"items\":[", /*close=*/true}});
  absl::StatusOr<HttpResponse> r = Transport(PlainAccess(server.url()))->Send(Get("/api/v1/nodes"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  std::string message(r.status().message());
  EXPECT_EQ(message.find("GET " + server.url() + "/api/v1/nodes: "), 0u) << message;
  EXPECT_NE(message.find("90 bytes of the body missing"), std::string::npos) << message;
}

TEST(Http1Transport, ABadStatusLineIsAnError) {
  ScriptedServer server({{"SSH-2.0-OpenSSH_9.2\r\n\r\n", /*close=*/true}});
  absl::StatusOr<HttpResponse> r = Transport(PlainAccess(server.url()))->Send(Get("/api"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("not an HTTP/1.1 status line"),
            std::string::npos)
      << r.status();
}

TEST(Http1Transport, AnErrorAnswerToAWatchIsCollectedWithItsRetryAfter) {
  ScriptedServer server(
      {{"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 4\r\n"
        "Content-Length: 10\r\n\r\n{\"code\":1}"}});
  HttpRequest watch = Get("/api/v1/nodes?watch=true");
  bool streamed = false;
  watch.on_body = [&](std::string_view) { return streamed = true; };
  absl::StatusOr<HttpResponse> r = Transport(PlainAccess(server.url()))->Send(watch);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->retry_after, "4");
  EXPECT_EQ(r->body, "{\"code\":1}");
  EXPECT_FALSE(streamed);
}

TEST(Http1Transport, RefusesWhatOnlyCurlCanServe) {
  ClusterAccess plugin = PlainAccess("https://10.0.0.1:6443");
  plugin.exec.emplace();
  plugin.exec->command = "get-token";
  std::string why;
  EXPECT_FALSE(Http1CanServe(plugin, &why));
  EXPECT_NE(why.find("credential plugin"), std::string::npos);
  EXPECT_FALSE(NewHttp1Transport(plugin, {}).ok());
  EXPECT_FALSE(Http1CanServe(PlainAccess("socks5://10.0.0.1:1080")));
  EXPECT_TRUE(Http1CanServe(PlainAccess("https://[fd00::1]:6443")));

  const char* saved = std::getenv("HTTPS_PROXY");
  std::string restore = saved ? saved : "";
  setenv("HTTPS_PROXY", "http://proxy:3128", 1);
  EXPECT_FALSE(Http1CanServe(PlainAccess("https://10.0.0.1:6443"), &why));
  EXPECT_NE(why.find("$HTTPS_PROXY"), std::string::npos);
  if (saved) {
    setenv("HTTPS_PROXY", restore.c_str(), 1);
  } else {
    unsetenv("HTTPS_PROXY");
  }
}

// A node watch over TLS: events arrive while the chunked answer is still open, and a stop ends
// the transfer within about a second, without an error.
class Http1WatchTest : public gpunode::testing::TlsApiServerTest {};

TEST_F(Http1WatchTest, StreamsEventsAndStopsWithinASecond) {
  auto node = [](const std::string& config) {
    return nlohmann::json{
        {"metadata",
         {{"name", "gpu-a"}, {"labels", {{"nvidia.com/device-plugin.config", config}}}}},
        {"kind", "Node"},
        {"apiVersion", "v1"}};
  };
  server_->AddObject(node("ts4"));
  ClusterAccess access;
  access.server = server_->url();
  access.ca_pem = gpunode::testing::ReadText(dir_->path() + "/ca.crt");
  access.token = "double-token";
  access.description = "test";
  std::unique_ptr<HttpTransport> t = Transport(access);

  std::mutex mu;
  std::condition_variable arrived;
  std::string seen;
  std::atomic<bool> stop{false};
  HttpRequest watch =
      Get("/api/v1/nodes?fieldSelector=metadata.name%3Dgpu-a&watch=true&resourceVersion=0"
          "&timeoutSeconds=60");
  watch.on_body = [&](std::string_view chunk) {
    std::lock_guard<std::mutex> lock(mu);
    seen.append(chunk);
    arrived.notify_all();
    return true;
  };
  watch.keep_going = [&] { return !stop.load(); };
  auto wait_for = [&](const std::string& text) {
    std::unique_lock<std::mutex> lock(mu);
    return arrived.wait_for(lock, std::chrono::seconds(10),
                            [&] { return seen.find(text) != std::string::npos; });
  };
  std::future<absl::StatusOr<HttpResponse>> sent =
      std::async(std::launch::async, [&] { return t->Send(watch); });
  ASSERT_TRUE(wait_for("\"ts4\""));
  server_->AddObject(node("mps2"));
  ASSERT_TRUE(wait_for("\"mps2\""));
  EXPECT_EQ(sent.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);

  auto stopped_at = std::chrono::steady_clock::now();
  stop = true;
  ASSERT_EQ(sent.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - stopped_at, std::chrono::milliseconds(1500));
  absl::StatusOr<HttpResponse> r = sent.get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->body.empty());  // the events went to on_body

  // The transport is usable again afterwards, on a new connection.
  absl::StatusOr<HttpResponse> after = t->Send(Get("/api/v1/nodes/gpu-a"));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->status, 200);
}

}  // namespace
}  // namespace gpunode::kube
