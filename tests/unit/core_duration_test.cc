#include "core/duration.h"
#include "gtest/gtest.h"

namespace gpunode::core {
namespace {

TEST(ParseDuration, GoSyntaxAndBareSecondsAlike) {
  EXPECT_EQ(*ParseDuration("--timeout", "60"), absl::Seconds(60));
  EXPECT_EQ(*ParseDuration("--timeout", "60s"), absl::Seconds(60));
  EXPECT_EQ(*ParseDuration("--timeout", "1h30m"), absl::Minutes(90));
  EXPECT_EQ(*ParseDuration("--timeout", "500ms"), absl::Milliseconds(500));
  EXPECT_EQ(*ParseDuration("--timeout", "0"), absl::ZeroDuration());
}

TEST(ParseDuration, RefusesWhatIsNotADurationNamingTheSource) {
  for (const char* bad : {"", "soon", "-5s", "-1", "5 s", "inf", "1d"}) {
    absl::StatusOr<absl::Duration> d = ParseDuration("GFD_SLEEP_INTERVAL", bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(d.status().message().rfind("GFD_SLEEP_INTERVAL ", 0), 0u) << d.status();
  }
}

TEST(ParseDuration, RangeIsSaidInDurations) {
  absl::StatusOr<absl::Duration> d =
      ParseDuration("--interval", "10ms", {absl::Milliseconds(100), absl::Hours(1)});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(),
            "--interval 10ms: out of range; give a duration from 100ms to 1h");
  d = ParseDuration("--refresh-interval", "0", {.min = absl::Seconds(1)});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(),
            "--refresh-interval 0: out of range; give a duration of 1s or more");
  EXPECT_TRUE(ParseDuration("--interval", "1h", {absl::Milliseconds(100), absl::Hours(1)}).ok());
}

}  // namespace
}  // namespace gpunode::core
