#include "http_client/response_parser.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace gpunode::http_client {
namespace {

struct Parsed {
  absl::Status status;
  bool done = false;
  int code = 0;
  std::string body;
  std::string retry_after;
  bool keep_alive = false;
};

// Feeds `wire` in the pieces that `cuts` (ascending offsets) make, then ends the connection when
// `close` says so.
Parsed Parse(const std::string& wire, const std::vector<size_t>& cuts, bool close = false,
             bool head = false) {
  ResponseParser parser(head);
  Parsed out;
  size_t from = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(wire.size());
  for (size_t end : ends) {
    out.status =
        parser.Feed(std::string_view(wire).substr(from, end - from), [&](std::string_view data) {
          EXPECT_TRUE(parser.head_done());
          out.body.append(data);
          return true;
        });
    from = end;
    if (!out.status.ok()) break;
  }
  if (out.status.ok() && close) out.status = parser.Finish();
  out.done = parser.done();
  out.code = parser.status();
  out.retry_after = parser.retry_after();
  out.keep_alive = parser.keep_alive();
  return out;
}

// The same response, whole, then split at every byte boundary, then fed one byte at a time.
void ExpectAtEverySplit(const std::string& wire, int code, const std::string& body,
                        bool close = false) {
  std::vector<std::vector<size_t>> splits = {{}};
  for (size_t i = 1; i < wire.size(); ++i) splits.push_back({i});
  std::vector<size_t> bytes;
  for (size_t i = 1; i < wire.size(); ++i) bytes.push_back(i);
  splits.push_back(bytes);
  for (const std::vector<size_t>& cuts : splits) {
    Parsed p = Parse(wire, cuts, close);
    SCOPED_TRACE(cuts.empty() ? "whole" : cuts.size() == 1 ? std::to_string(cuts[0]) : "bytes");
    ASSERT_TRUE(p.status.ok()) << p.status;
    EXPECT_TRUE(p.done);
    EXPECT_EQ(p.code, code);
    EXPECT_EQ(p.body, body);
  }
}

TEST(ResponseParser, ContentLengthBodyAtEverySplit) {
  std::string wire =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n"
      "{\"kind\":\"Node\"}\n";
  ExpectAtEverySplit(wire, 200, "{\"kind\":\"Node\"}\n");
  Parsed p = Parse(wire, {});
  EXPECT_TRUE(p.keep_alive);
}

TEST(ResponseParser, ChunkedBodyWithExtensionsAndTrailersAtEverySplit) {
  std::string wire =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "18\r\n{\"type\":\"ADDED\",\"o\":{}}\n\r\n"
      "5;name=value\r\nhello\r\n"
      "A \r\n0123456789\r\n"
      "0\r\nX-Trailer: yes\r\n\r\n";
  ExpectAtEverySplit(wire, 200, "{\"type\":\"ADDED\",\"o\":{}}\nhello0123456789");
  EXPECT_TRUE(Parse(wire, {}).keep_alive);
}

TEST(ResponseParser, BodyToTheCloseAtEverySplit) {
  std::string wire = "HTTP/1.0 503 Service Unavailable\nRetry-After: 3\n\nbusy, try later";
  ExpectAtEverySplit(wire, 503, "busy, try later", /*close=*/true);
  Parsed p = Parse(wire, {}, true);
  EXPECT_EQ(p.retry_after, "3");
  EXPECT_FALSE(p.keep_alive);
}

TEST(ResponseParser, InterimAnswersAreSkipped) {
  ExpectAtEverySplit(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}", 201,
      "{}");
}

TEST(ResponseParser, NoBodyForHeadAnd204And304) {
  std::string with_length = "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n";
  Parsed head = Parse(with_length, {}, false, /*head=*/true);
  EXPECT_TRUE(head.done);
  EXPECT_TRUE(head.keep_alive);
  EXPECT_TRUE(Parse("HTTP/1.1 204 No Content\r\n\r\n", {}).done);
  EXPECT_TRUE(Parse("HTTP/1.1 304 Not Modified\r\n\r\n", {}).done);
  EXPECT_FALSE(Parse(with_length, {}).done);  // not a HEAD: 50 bytes are still to come
}

TEST(ResponseParser, ConnectionCloseAndTrailingBytesEndKeepAlive) {
  EXPECT_FALSE(
      Parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", {}).keep_alive);
  Parsed extra = Parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}garbage", {});
  EXPECT_TRUE(extra.status.ok());
  EXPECT_EQ(extra.body, "{}");
  EXPECT_FALSE(extra.keep_alive);
}

TEST(ResponseParser, StopsWhenTheCallerSaysSo) {
  ResponseParser parser;
  std::string seen;
  absl::Status st =
      parser.Feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n",
                  [&](std::string_view data) {
                    seen.append(data);
                    return false;
                  });
  EXPECT_TRUE(st.ok());
  EXPECT_TRUE(parser.stopped());
  EXPECT_EQ(seen, "abc");
  EXPECT_FALSE(parser.keep_alive());
}

TEST(ResponseParser, ACloseBeforeTheEndIsAnError) {
  std::vector<std::string> truncated = {
      "",
      "HTTP/1.1 200 OK\r\nContent-",
      "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n",
  };
  for (const std::string& wire : truncated) {
    Parsed p = Parse(wire, {}, /*close=*/true);
    EXPECT_FALSE(p.status.ok()) << wire;
    EXPECT_FALSE(p.done) << wire;
  }
  EXPECT_NE(std::string(Parse(truncated[2], {}, true).status.message())
                .find("5 bytes of the body missing"),
            std::string::npos);
}

TEST(ResponseParser, MalformedHeadsAndFramingAreRefused) {
  struct Case {
    std::string wire;
    std::string says;
  };
  std::vector<Case> cases = {
      {"HTZP/1.1 200 OK\r\n\r\n", "not an HTTP/1.1 status line"},
      {"HTTP/2 200\r\n\r\n", "not an HTTP/1.1 status line"},
      {"HTTP/1.1 2000 OK\r\n\r\n", "not an HTTP/1.1 status line"},
      {"HTTP/1.1 20 OK\r\n\r\n", "not an HTTP/1.1 status line"},
      {"HTTP/1.1 700 Odd\r\n\r\n", "not an HTTP/1.1 status line"},
      {"HTTP/1.1 101 Switching Protocols\r\n\r\n", "switched protocols"},
      {"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "not a header line"},
      {"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "not a header line"},
      {"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n", "folded header"},
      {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "is not a byte count"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "disagree"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "was not asked for"},
      {"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n", "was not asked for"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "not a chunk size line"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1234567890abcdef0\r\n",
       "not a chunk size line"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", "line end"},
  };
  for (const Case& c : cases) {
    Parsed p = Parse(c.wire, {});
    ASSERT_FALSE(p.status.ok()) << c.wire;
    EXPECT_NE(std::string(p.status.message()).find(c.says), std::string::npos)
        << c.wire << " -> " << p.status;
  }
}

TEST(ResponseParser, AnEndlessHeadIsCutOff) {
  ResponseParser parser;
  std::string line = "X-Filler: " + std::string(1000, 'a') + "\r\n";
  absl::Status st = parser.Feed("HTTP/1.1 200 OK\r\n", nullptr);
  for (int i = 0; st.ok() && i < 100; ++i) st = parser.Feed(line, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("longer than"), std::string::npos);
  EXPECT_FALSE(parser.Feed("\r\n", nullptr).ok());  // the error stays
}

}  // namespace
}  // namespace gpunode::http_client
