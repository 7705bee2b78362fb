#include "kube/quantity.h"

#include "gtest/gtest.h"

namespace gpunode::kube {
namespace {

TEST(QuantityTest, ParsesTheKubernetesGrammarExactly) {
  struct Case {
    const char* text;
    int64_t milli;
  } cases[] = {
      {"1", 1000},      {"8", 8000},         {"0", 0},
      {"500m", 500},    {"1.5", 1500},       {"0.5", 500},
      {".5", 500},      {"1.", 1000},        {"1k", 1000000},
      {"1Ki", 1024000}, {"2Mi", 2097152000}, {"1e3", 1000000},
      {"1E-3", 1},      {"+2", 2000},        {"-1", -1000},
      {"100u", 1},      {"1n", 1},           {"3G", 3000000000000},
      {"1500m", 1500},  {"0.001", 1},        {"64Gi", 68719476736000},
  };
  for (const Case& c : cases) {
    absl::StatusOr<int64_t> got = ParseQuantityMilli(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status();
    EXPECT_EQ(*got, c.milli) << c.text;
  }
}

TEST(QuantityTest, RejectsWhatTheApiServerRejects) {
  for (const char* bad : {"", "four", "1.2.3", "1Xi", "1 ", "e3", "1e", "1ee3", "m", "1KiB",
                          "9999999999999999999999999999999", "10E"}) {
    absl::StatusOr<int64_t> got = ParseQuantityMilli(bad);
    EXPECT_FALSE(got.ok()) << '"' << bad << '"';
    if (!got.ok()) {
      EXPECT_NE(got.status().message().find("not a Kubernetes quantity"), absl::string_view::npos);
    }
  }
}

TEST(QuantityTest, FormatsLikeKubectl) {
  EXPECT_EQ(FormatMilli(8000), "8");
  EXPECT_EQ(FormatMilli(500), "500m");
  EXPECT_EQ(FormatMilli(0), "0");
  EXPECT_EQ(CeilUnits(500), 1);
  EXPECT_EQ(CeilUnits(2000), 2);
}

}  // namespace
}  // namespace gpunode::kube
