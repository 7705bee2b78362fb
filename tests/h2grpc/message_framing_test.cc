#include "h2grpc/message_framing.h"

#include <gtest/gtest.h>

#include "h2grpc/grpc_status.h"

namespace gpunode::h2grpc {
namespace {

TEST(MessageFramingTest, MessagesSurviveAnySplitOfTheBody) {
  std::string body;
  AppendFramedMessage("first", body);
  AppendFramedMessage("", body);
  AppendFramedMessage(std::string(70000, 'x'), body);
  for (size_t piece : {1u, 3u, 5u, 16384u}) {
    MessageReader reader;
    std::vector<std::string> got;
    for (size_t at = 0; at < body.size(); at += piece) {
      ASSERT_TRUE(reader.Append(std::string_view(body).substr(at, piece)).ok());
      for (auto& m : reader.TakeMessages()) got.push_back(m);
    }
    ASSERT_EQ(got.size(), 3u) << "piece " << piece;
    EXPECT_EQ(got[0], "first");
    EXPECT_EQ(got[1], "");
    EXPECT_EQ(got[2], std::string(70000, 'x'));
    EXPECT_TRUE(reader.AtMessageBoundary());
  }
}

TEST(MessageFramingTest, APartialMessageIsNotABoundary) {
  std::string body;
  AppendFramedMessage("payload", body);
  MessageReader reader;
  ASSERT_TRUE(reader.Append(std::string_view(body).substr(0, body.size() - 1)).ok());
  EXPECT_TRUE(reader.TakeMessages().empty());
  EXPECT_FALSE(reader.AtMessageBoundary());
}

TEST(MessageFramingTest, CompressedAndOversizedMessagesAreRefused) {
  MessageReader compressed;
  absl::Status st = compressed.Append(std::string("\x01\x00\x00\x00\x01x", 6));
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(compressed.Append("more").code(), absl::StatusCode::kUnimplemented);

  MessageReader small(10);
  st = small.Append(std::string("\x00\x00\x00\x00\x0b", 5));
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("11 vs. 10"), std::string::npos) << st;
}

TEST(GrpcStatusTest, MessagesArePercentEncodedBothWays) {
  const std::string message = "100% sure: \xc3\xa9t\xc3\xa9\nnext line";
  std::string encoded = PercentEncode(message);
  EXPECT_EQ(encoded, "100%25 sure: %C3%A9t%C3%A9%0Anext line");
  EXPECT_EQ(PercentDecode(encoded), message);
  EXPECT_EQ(PercentDecode("50%"), "50%");
  EXPECT_EQ(PercentDecode("%zz"), "%zz");
}

TEST(GrpcStatusTest, StatusFromTrailersAndHttp) {
  absl::Status st = StatusFromTrailers("9", "not%20now");
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "not now");
  EXPECT_TRUE(StatusFromTrailers("0", "").ok());
  EXPECT_EQ(StatusFromTrailers("17", "").code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(StatusFromTrailers("x", "").code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(StatusFromHttp(404).code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(StatusFromHttp(503).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(StatusFromHttp(500).code(), absl::StatusCode::kUnknown);
}

}  // namespace
}  // namespace gpunode::h2grpc
