// The check graph: prerequisites, and the typed precondition of the checks that read the GPUs.
#include "doctor/runner.h"

#include "core/host_root.h"
#include "gtest/gtest.h"

namespace gpunode::doctor {
namespace {

Check HostOk(std::string id, std::vector<std::string> needs = {}) {
  return {"test", std::move(id), std::move(needs),
          HostCheck([](const Context&) { return Ok("fine"); })};
}

TEST(DoctorRunner, AGpuCheckWithoutNvmlIsSkippedWithWhyAndNeverRuns) {
  core::HostRoot host("/");
  Context context(host, nullptr, absl::FailedPreconditionError("libnvidia-ml.so.1 not found"), {});
  bool ran = false;
  std::vector<Check> checks = {
      HostOk("test.host"),
      {"test", "test.gpus", {"test.host"}, GpuCheck([&](const Context&, const Gpus& gpus) {
         ran = true;
         return Ok(std::to_string(gpus.node.gpus.size()));
       })},
  };
  std::vector<Finding> findings = RunChecks(checks, context);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].status, CheckStatus::kOk);
  EXPECT_EQ(findings[1].id, "test.gpus");
  EXPECT_EQ(findings[1].layer, "test");
  EXPECT_EQ(findings[1].status, CheckStatus::kSkip);
  EXPECT_EQ(findings[1].summary, "needs NVML, which did not open");
  EXPECT_EQ(findings[1].evidence, "libnvidia-ml.so.1 not found");
  EXPECT_FALSE(ran);
  // Without NVML the node's snapshot is the reason NVML did not open, not a crash.
  EXPECT_EQ(context.Node().status().message(), "libnvidia-ml.so.1 not found");
}

TEST(DoctorRunner, PrerequisitesRunFirstAndBlockWhatBuildsOnThem) {
  core::HostRoot host("/");
  Context context(host, nullptr, absl::UnavailableError("no driver"), {});
  std::vector<Check> checks = {
      HostOk("test.top", {"test.bottom"}),
      {"test", "test.bottom", {}, HostCheck([](const Context&) {
         return Fail("broken", "evidence", "fix");
       })},
      HostOk("test.unknown", {"test.missing"}),
  };
  std::vector<Finding> findings = RunChecks(checks, context);
  ASSERT_EQ(findings.size(), 3u);
  EXPECT_EQ(findings[0].status, CheckStatus::kSkip);
  EXPECT_EQ(findings[0].summary, "blocked by test.bottom");
  EXPECT_EQ(findings[1].status, CheckStatus::kFail);
  EXPECT_EQ(findings[2].status, CheckStatus::kFail);
  EXPECT_EQ(findings[2].summary, "unknown prerequisite test.missing");
}

}  // namespace
}  // namespace gpunode::doctor
