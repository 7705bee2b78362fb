// ServerConnection byte for byte: an nghttp2 client session in the test writes the frames a
// client would, the connection answers with bytes, and the client session reads them back. What
// gRPC's own client never sends (a GET, a JSON body, two messages on a unary call) is sent here.
// The connection cap is a property of the socket loop, so it is tested on a real Server.
#include "h2grpc/server_connection.h"

#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "h2grpc/message_framing.h"
#include "h2grpc/server.h"
#include "temp_dir.h"

namespace gpunode::h2grpc {
namespace {

using ::testing::HasSubstr;

struct ClientStream {
  std::map<std::string, std::string> headers;   // the response's first HEADERS
  std::map<std::string, std::string> trailers;  // a later HEADERS
  std::string body;
  bool closed = false;
};

// A client session in memory: requests out as bytes, responses in from bytes.
class Http2Client {
 public:
  Http2Client() {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, &OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &OnData);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &OnClose);
    nghttp2_session_client_new(&session_, callbacks, this);
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
  }
  ~Http2Client() { nghttp2_session_del(session_); }

  // One request: HEADERS, then `body` in one DATA frame that ends the stream.
  int32_t Request(const std::string& method, const std::string& path,
                  const std::string& content_type, std::string body) {
    bodies_.push_back(std::make_unique<std::string>(std::move(body)));
    auto header = [](const std::string& name, const std::string& value) {
      return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                        reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                        value.size(), NGHTTP2_NV_FLAG_NONE};
    };
    static const std::string kMethod = ":method", kPath = ":path", kScheme = ":scheme",
                             kAuthority = ":authority", kContentType = "content-type",
                             kHttp = "http", kLocalhost = "localhost";
    std::vector<nghttp2_nv> nva = {header(kMethod, method), header(kScheme, kHttp),
                                   header(kAuthority, kLocalhost), header(kPath, path),
                                   header(kContentType, content_type)};
    nghttp2_data_provider provider{};
    provider.source.ptr = bodies_.back().get();
    provider.read_callback = &ReadBody;
    return nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), &provider, nullptr);
  }

  void Reset(int32_t stream) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream, NGHTTP2_CANCEL);
  }

  std::string Output() {
    std::string out;
    for (;;) {
      const uint8_t* data = nullptr;
      ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n <= 0) break;
      out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    return out;
  }

  void Input(const std::string& bytes) {
    ASSERT_EQ(nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(bytes.data()),
                                       bytes.size()),
              static_cast<ssize_t>(bytes.size()));
  }

  ClientStream& stream(int32_t id) { return streams_[id]; }

 private:
  static ssize_t ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                          nghttp2_data_source* source, void*) {
    auto* body = static_cast<std::string*>(source->ptr);
    size_t n = std::min(length, body->size());
    std::memcpy(buf, body->data(), n);
    body->erase(0, n);
    if (body->empty()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t name_len, const uint8_t* value, size_t value_len, uint8_t,
                      void* self) {
    ClientStream& s = static_cast<Http2Client*>(self)->streams_[frame->hd.stream_id];
    auto& into = frame->headers.cat == NGHTTP2_HCAT_HEADERS ? s.trailers : s.headers;
    into[std::string(reinterpret_cast<const char*>(name), name_len)] =
        std::string(reinterpret_cast<const char*>(value), value_len);
    return 0;
  }
  static int OnData(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len,
                    void* self) {
    static_cast<Http2Client*>(self)->streams_[id].body.append(reinterpret_cast<const char*>(data),
                                                              len);
    return 0;
  }
  static int OnClose(nghttp2_session*, int32_t id, uint32_t, void* self) {
    static_cast<Http2Client*>(self)->streams_[id].closed = true;
    return 0;
  }

  nghttp2_session* session_ = nullptr;
  std::vector<std::unique_ptr<std::string>> bodies_;
  std::map<int32_t, ClientStream> streams_;
};

std::string Framed(std::initializer_list<std::string> messages) {
  std::string out;
  for (const std::string& m : messages) AppendFramedMessage(m, out);
  return out;
}

class ServerConnectionTest : public ::testing::Test {
 protected:
  ServerConnectionTest() {
    service_.AddUnary("/test.Echo/Say", [this](std::string_view request) {
      ++unary_calls_;
      return absl::StatusOr<std::string>(std::string(request));
    });
    service_.AddServerStreaming("/test.Echo/Watch", [this](std::string_view, ServerStream& s) {
      // Set before taking the lock: on a call that is already over it runs at once, here.
      s.SetOnCancel([this] {
        std::lock_guard lock(mutex_);
        cancel_seen_ = true;
        changed_.notify_all();
      });
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return cancel_seen_; });  // no timeout: only the signal wakes it
      lock.unlock();
      s.SetOnCancel(nullptr);
      return absl::OkStatus();
    });
    connection_ = std::make_unique<ServerConnection>(
        service_, [this](std::function<void()> call) { workers_.emplace_back(std::move(call)); },
        [] {});
  }
  ~ServerConnectionTest() override {
    connection_.reset();
    for (std::thread& t : workers_) t.join();
  }

  // Moves bytes both ways until neither side has anything to say.
  void Exchange() {
    for (int round = 0; round < 16; ++round) {
      std::string to_server = client_.Output();
      if (!to_server.empty()) {
        ASSERT_TRUE(connection_->Receive(to_server).ok());
      }
      connection_->Pump();
      std::string to_client;
      connection_->TakeOutput(to_client);
      if (!to_client.empty()) client_.Input(to_client);
      if (to_server.empty() && to_client.empty()) return;
    }
  }

  Service service_;
  std::unique_ptr<ServerConnection> connection_;
  std::vector<std::thread> workers_;
  Http2Client client_;
  std::atomic<int> unary_calls_{0};
  std::mutex mutex_;
  std::condition_variable changed_;
  bool cancel_seen_ = false;
};

TEST_F(ServerConnectionTest, AUnaryCallIsAnsweredWithItsMessageAndStatusZero) {
  int32_t id = client_.Request("POST", "/test.Echo/Say", "application/grpc", Framed({"hello"}));
  Exchange();
  ClientStream& s = client_.stream(id);
  EXPECT_TRUE(s.closed);
  EXPECT_EQ(s.headers[":status"], "200");
  EXPECT_EQ(s.headers["content-type"], "application/grpc");
  EXPECT_EQ(s.body, Framed({"hello"}));
  EXPECT_EQ(s.trailers["grpc-status"], "0");
}

TEST_F(ServerConnectionTest, AMethodOtherThanPostIs405) {
  int32_t id = client_.Request("GET", "/test.Echo/Say", "application/grpc", Framed({"hello"}));
  Exchange();
  ClientStream& s = client_.stream(id);
  EXPECT_TRUE(s.closed);
  EXPECT_EQ(s.headers[":status"], "405");
  EXPECT_EQ(unary_calls_, 0);
}

TEST_F(ServerConnectionTest, AContentTypeOtherThanGrpcIs415) {
  int32_t id = client_.Request("POST", "/test.Echo/Say", "application/json", "{}");
  Exchange();
  ClientStream& s = client_.stream(id);
  EXPECT_TRUE(s.closed);
  EXPECT_EQ(s.headers[":status"], "415");
  EXPECT_EQ(unary_calls_, 0);
  // A subtype of application/grpc is gRPC.
  id = client_.Request("POST", "/test.Echo/Say", "application/grpc+proto", Framed({"x"}));
  Exchange();
  EXPECT_EQ(client_.stream(id).trailers["grpc-status"], "0");
}

TEST_F(ServerConnectionTest, ASecondMessageOnAUnaryCallIsRefusedBeforeTheHandlerRuns) {
  int32_t id =
      client_.Request("POST", "/test.Echo/Say", "application/grpc", Framed({"one", "two"}));
  Exchange();
  ClientStream& s = client_.stream(id);
  EXPECT_TRUE(s.closed);
  EXPECT_EQ(s.headers[":status"], "200");
  // Trailers-Only: the status is in the one HEADERS frame.
  EXPECT_EQ(s.headers["grpc-status"], "13");
  EXPECT_THAT(s.headers["grpc-message"], HasSubstr("takes one request message"));
  EXPECT_EQ(unary_calls_, 0);
}

TEST_F(ServerConnectionTest, AnUnknownMethodIsUnimplemented) {
  int32_t id = client_.Request("POST", "/test.Echo/Nothing", "application/grpc", Framed({"x"}));
  Exchange();
  EXPECT_EQ(client_.stream(id).headers["grpc-status"], "12");
}

TEST_F(ServerConnectionTest, AClientResetWakesTheStreamingHandlerThroughItsCancelSignal) {
  int32_t id = client_.Request("POST", "/test.Echo/Watch", "application/grpc", Framed({""}));
  Exchange();
  ASSERT_EQ(workers_.size(), 1u);  // the handler runs and blocks on its condition
  client_.Reset(id);
  Exchange();
  std::unique_lock lock(mutex_);
  EXPECT_TRUE(changed_.wait_for(lock, std::chrono::seconds(10), [&] { return cancel_seen_; }));
}

TEST(ServerConnectionCapTest, PastTheCapAConnectionIsClosedAndAFreedSlotIsReused) {
  testing::TempDir dir;
  std::string path = dir.path() + "/s.sock";
  Server server{Service()};
  ASSERT_TRUE(server.Start(path).ok());
  auto connect_one = [&] {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    return fd;
  };
  // What the server does first with a connection: its SETTINGS frame (> 0 bytes), or EOF (0).
  auto first_read = [](int fd) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) != 1) return -1L;
    char buffer[256];
    return static_cast<long>(read(fd, buffer, sizeof buffer));
  };
  std::vector<int> accepted;
  for (int i = 0; i < 32; ++i) {
    accepted.push_back(connect_one());
    ASSERT_GT(first_read(accepted.back()), 0) << "connection " << i;
  }
  int refused = connect_one();
  EXPECT_EQ(first_read(refused), 0);  // closed without a byte
  close(refused);
  close(accepted.back());
  accepted.pop_back();
  // A connection that reaches the loop before it has read the hang-up is still refused (the cap
  // holds at that moment); each attempt ends in an answer, SETTINGS or EOF, so no time is guessed.
  int again = -1;
  long got = 0;
  for (int attempt = 0; attempt < 50 && got <= 0; ++attempt) {
    if (again >= 0) close(again);
    again = connect_one();
    got = first_read(again);
  }
  EXPECT_GT(got, 0);
  close(again);
  for (int fd : accepted) close(fd);
  server.Stop();
}

}  // namespace
}  // namespace gpunode::h2grpc
