#include "kube/list_stream.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace gpunode::kube {
namespace {

// A readable, seekable descriptor holding `text`, as a file would be.
class TextFd {
 public:
  explicit TextFd(std::string_view text) : fd_(::memfd_create("list", MFD_CLOEXEC)) {
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(::write(fd_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    EXPECT_EQ(::lseek(fd_, 0, SEEK_SET), 0);
  }
  ~TextFd() { ::close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_;
};

struct Split {
  std::vector<std::string> items;
  std::vector<TextOrigin> origins;
  std::vector<std::pair<std::string, std::string>> members;
  std::string envelope;
  TextOrigin envelope_origin;
  size_t largest_buffer = 0;
};

absl::StatusOr<Split> SplitText(std::string_view text, size_t buffer_bytes) {
  TextFd in(text);
  ListStream stream(in.fd(), "in.json", buffer_bytes);
  Split out;
  absl::StatusOr<bool> complete = stream.Run(
      [&](std::string_view key, std::string_view value) {
        out.members.emplace_back(std::string(key), std::string(value));
      },
      [&](const ListStream::Item& item) -> absl::StatusOr<ListStream::Next> {
        out.items.emplace_back(item.json.data(), item.json.size());
        out.origins.push_back(item.origin);
        // simdjson may read SIMDJSON_PADDING bytes past the item.
        EXPECT_GE(item.json.capacity(), item.json.size() + simdjson::SIMDJSON_PADDING);
        out.largest_buffer = std::max(out.largest_buffer, stream.buffer_bytes());
        return ListStream::Next::kContinue;
      });
  if (!complete.ok()) return complete.status();
  EXPECT_TRUE(*complete);
  out.envelope.assign(stream.Envelope().data(), stream.Envelope().size());
  out.envelope_origin = stream.EnvelopeOrigin();
  return out;
}

// Buffer sizes from one byte (a refill at every byte) to more than any test document.
constexpr size_t kBufferSizes[] = {1, 2, 3, 7, 16, 64, 4096, ListStream::kDefaultBufferBytes};

TEST(ListStreamTest, HandsOutEachItemAndKeepsTheRestWithEmptyItems) {
  const std::string text = R"({"kind": "List",
  "apiVersion": "v1",
  "items": [
    {"kind": "Pod", "metadata": {"name": "a\"}]\\"}, "x": [[1, {"y": "\\\\"}], "]"]},
    {"kind":"Node","s":"\u005d\\\"[{"},
    7,
    "str\"ing",
    [ ]
  ],
  "metadata": {"resourceVersion": "1"}
}
)";
  const std::vector<std::string> items = {
      R"({"kind": "Pod", "metadata": {"name": "a\"}]\\"}, "x": [[1, {"y": "\\\\"}], "]"]})",
      R"({"kind":"Node","s":"\u005d\\\"[{"})", "7", R"("str\"ing")", "[ ]"};
  const std::string envelope = R"({"kind": "List",
  "apiVersion": "v1",
  "items": [],
  "metadata": {"resourceVersion": "1"}
}
)";
  for (size_t buffer : kBufferSizes) {
    absl::StatusOr<Split> split = SplitText(text, buffer);
    ASSERT_TRUE(split.ok()) << buffer << ": " << split.status();
    EXPECT_EQ(split->items, items) << buffer;
    EXPECT_EQ(split->envelope, envelope) << buffer;
    ASSERT_EQ(split->members.size(), 3u) << buffer;
    EXPECT_EQ(split->members[0], std::make_pair(std::string("kind"), std::string("\"List\"")));
    EXPECT_EQ(split->members[2].first, "metadata");
    EXPECT_EQ(split->members[2].second, R"({"resourceVersion": "1"})");
    // Each item's origin is where it is in the input: byte and line.
    for (size_t i = 0; i < items.size(); ++i) {
      size_t at = text.find(items[i]);
      EXPECT_EQ(split->origins[i].byte, at) << i;
      EXPECT_EQ(split->origins[i].line, 1 + std::count(text.begin(), text.begin() + at, '\n')) << i;
    }
    // The cut starts right after "[" and spans up to "]".
    ASSERT_EQ(split->envelope_origin.cuts.size(), 1u);
    const TextOrigin::Cut& cut = split->envelope_origin.cuts[0];
    EXPECT_EQ(cut.at, envelope.find("[]") + 1);
    size_t open = text.find("[\n    {") + 1;
    size_t close = text.find("\n  ],") + 3;
    EXPECT_EQ(cut.bytes, close - open);
    EXPECT_EQ(cut.lines, std::count(text.begin() + open, text.begin() + close, '\n'));
  }
}

TEST(ListStreamTest, TheBufferHoldsOneItemNotTheWholeList) {
  std::string item = R"({"kind":"Pod","metadata":{"name":")" + std::string(3000, 'p') + "\"}}";
  std::string text = R"({"kind":"List","items":[)";
  for (int i = 0; i < 100; ++i) text += (i ? "," : "") + item;
  text += "]}";
  absl::StatusOr<Split> split = SplitText(text, 4096);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->items.size(), 100u);
  // The list is 300 KB; the buffer never needed more than a few items' worth.
  EXPECT_LE(split->largest_buffer, 3 * item.size());
  EXPECT_EQ(split->envelope, R"({"kind":"List","items":[]})");
}

TEST(ListStreamTest, WhatIsNotAListOfItemsIsKeptAsItIs) {
  for (const char* text :
       {"", "   ", "[1, 2]", "42", "{}", R"({"items": null})", R"({"items": {"a": [1]}})",
        R"({"\u0069tems": [1, 2]})", R"({"kind": "Pod", "spec": {"containers": [{}]}})",
        R"({"kind": "Pod" "items": [1]})", R"({"kind": "List", "items": [1]} trailing)",
        "apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n"}) {
    for (size_t buffer : kBufferSizes) {
      absl::StatusOr<Split> split = SplitText(text, buffer);
      ASSERT_TRUE(split.ok()) << text << ": " << split.status();
      std::string expected = text;
      if (std::string_view(text).starts_with(R"({"kind": "List", "items": [1]})")) {
        expected = R"({"kind": "List", "items": []} trailing)";
      }
      EXPECT_EQ(split->envelope, expected) << text << " with buffer " << buffer;
    }
  }
}

TEST(ListStreamTest, EveryItemsArrayIsStreamed) {
  absl::StatusOr<Split> split = SplitText(R"({"items":[1],"kind":"List","items":[2, 3]})", 3);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->items, (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(split->envelope, R"({"items":[],"kind":"List","items":[]})");
  ASSERT_EQ(split->envelope_origin.cuts.size(), 2u);
  EXPECT_EQ(split->envelope_origin.cuts[0].at, 10u);
  EXPECT_EQ(split->envelope_origin.cuts[0].bytes, 1u);
  EXPECT_EQ(split->envelope_origin.cuts[1].at, 35u);
  EXPECT_EQ(split->envelope_origin.cuts[1].bytes, 4u);
}

TEST(ListStreamTest, ABrokenItemsArrayIsAnErrorNotALoss) {
  struct Case {
    const char* text;
    const char* problem;
  } cases[] = {
      {R"({"items": [{"kind": "Pod"}, {"kind": "P)", "the input ends inside items[1]"},
      {R"({"items": [{"kind": "Pod"} )", "the input ends after items[0]"},
      {R"({"items": [)", "the input ends inside items, before items[0]"},
      {R"({"items": [{"a": 1} {"b": 2}]})", "expected , or ] after items[0]"},
      {R"({"items": [{"a": 1},]})", "expected items[1], found ]"},
      {R"({"items": [,{"a": 1}]})", "expected items[0], found ,"},
  };
  for (const Case& c : cases) {
    for (size_t buffer : kBufferSizes) {
      absl::StatusOr<Split> split = SplitText(c.text, buffer);
      ASSERT_FALSE(split.ok()) << c.text;
      std::string message(split.status().message());
      EXPECT_TRUE(message.starts_with(std::string("in.json: not valid JSON (") + c.problem))
          << message;
      EXPECT_TRUE(message.ends_with("; is the file complete?")) << message;
    }
  }
  const std::string text = "{\"items\": [\n  {\"a\": 1}\n  {\"b\": 2}]}";
  absl::StatusOr<Split> split = SplitText(text, 5);
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find(" near line 3 (byte " +
                                          std::to_string(text.find("{\"b\"")) + ")"),
            std::string::npos)
      << split.status();
}

TEST(ListStreamTest, AnItemCanStopTheRead) {
  TextFd in(R"({"items": [1, 2, 3]})");
  ListStream stream(in.fd(), "in.json", 2);
  size_t seen = 0;
  absl::StatusOr<bool> complete =
      stream.Run([](std::string_view, std::string_view) {},
                 [&](const ListStream::Item& item) -> absl::StatusOr<ListStream::Next> {
                   ++seen;
                   return item.index == 1 ? ListStream::Next::kStop : ListStream::Next::kContinue;
                 });
  ASSERT_TRUE(complete.ok()) << complete.status();
  EXPECT_FALSE(*complete);
  EXPECT_EQ(seen, 2u);
}

TEST(ListStreamTest, AnItemsErrorStopsTheRead) {
  TextFd in(R"({"items": [1, 2, 3]})");
  ListStream stream(in.fd(), "in.json");
  absl::StatusOr<bool> complete =
      stream.Run([](std::string_view, std::string_view) {},
                 [&](const ListStream::Item&) -> absl::StatusOr<ListStream::Next> {
                   return absl::InvalidArgumentError("in.json: items[0]: bad");
                 });
  ASSERT_FALSE(complete.ok());
  EXPECT_EQ(complete.status().message(), "in.json: items[0]: bad");
}

}  // namespace
}  // namespace gpunode::kube
