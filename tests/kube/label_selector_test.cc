// Label selectors as kubectl's -l writes them, matched against a snapshot's labels as the API
// server would match them.
#include "kube/label_selector.h"

#include <string>

#include "gtest/gtest.h"

namespace gpunode::kube {
namespace {

bool Selects(const std::string& selector, const Labels& labels) {
  absl::StatusOr<LabelSelector> parsed = ParseLabelSelector(selector);
  EXPECT_TRUE(parsed.ok()) << selector << ": " << parsed.status();
  return parsed.ok() && Matches(*parsed, labels);
}

TEST(ParseLabelSelector, EveryFormKubectlTakes) {
  const Labels node = {{"pool", "training"}, {"nvidia.com/gpu.present", "true"}, {"zone", "a"}};
  EXPECT_TRUE(Selects("", node));
  EXPECT_TRUE(Selects("pool=training", node));
  EXPECT_TRUE(Selects("pool==training, nvidia.com/gpu.present=true", node));
  EXPECT_FALSE(Selects("pool=inference", node));
  EXPECT_TRUE(Selects("pool!=inference", node));
  EXPECT_TRUE(Selects("team!=ml", node)) << "!= matches a node without the key";
  EXPECT_FALSE(Selects("pool!=training", node));
  EXPECT_TRUE(Selects("zone", node));
  EXPECT_FALSE(Selects("!zone", node));
  EXPECT_TRUE(Selects("!team", node));
  EXPECT_TRUE(Selects("zone in (a, b),pool notin (inference)", node));
  EXPECT_FALSE(Selects("zone in (b,c)", node));
  EXPECT_FALSE(Selects("pool notin (training)", node));
  EXPECT_TRUE(Selects("team notin (ml)", node));
}

TEST(ParseLabelSelector, ABadTermIsNamed) {
  for (const char* bad : {"pool in (a", "pool in training", "pool within (a)", "a=b,,c", "=x",
                          "pool=a b", "pool>3", "(a)"}) {
    absl::StatusOr<LabelSelector> parsed = ParseLabelSelector(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(std::string(parsed.status().message()).find("key in (a,b) or key notin (a,b)"),
              std::string::npos)
        << parsed.status();
  }
}

}  // namespace
}  // namespace gpunode::kube
