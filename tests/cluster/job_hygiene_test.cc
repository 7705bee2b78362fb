// gpu-pod-idle and gpu-pod-long-running decide on the pods' age at a given time.
#include "cluster/job_hygiene.h"

#include "build_paths.h"
#include "gtest/gtest.h"
#include "kube/snapshot_reader.h"

namespace gpunode::cluster {
namespace {

std::vector<std::string> Objects(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) out.push_back(f.id + " " + f.object);
  return out;
}

absl::Time At(const char* rfc3339) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) << err;
  return t;
}

TEST(JobHygieneTest, IdleNeedsAPodOlderThanTheWindowAndItsSeries) {
  auto snap =
      kube::ReadSnapshotFile(std::string(build_paths::kClusterFixtures) + "/gpu-pod-idle.json");
  ASSERT_TRUE(snap.ok()) << snap.status();
  HygieneOptions options;
  options.now = At("2024-05-05T09:20:00Z");  // eval-0 started 20 minutes ago
  options.idle = IdleEvidence{.window = absl::Minutes(30),
                              .below_percent = 5,
                              .query = "q",
                              .pods = {{"research", "notebook-alice", 0.5}, {"ml", "eval-0", 0}}};
  std::vector<Finding> findings;
  AddJobHygieneFindings(*snap, options, findings);
  // train-llama's pod has no series; eval-0 may still be loading its data.
  EXPECT_EQ(Objects(findings),
            std::vector<std::string>{"gpu-pod-idle pod/research/notebook-alice"});

  options.now = At("2024-05-05T10:00:00Z");
  findings.clear();
  AddJobHygieneFindings(*snap, options, findings);
  EXPECT_EQ(Objects(findings), (std::vector<std::string>{"gpu-pod-idle pod/research/notebook-alice",
                                                         "gpu-pod-idle pod/ml/eval-0"}));
}

TEST(JobHygieneTest, LongRunningCountsFromCreation) {
  auto snap =
      kube::ReadSnapshotFile(std::string(build_paths::kClusterFixtures) + "/gpu-pod-idle.json");
  ASSERT_TRUE(snap.ok()) << snap.status();
  HygieneOptions options;
  options.now = At("2024-05-05T14:30:00Z");
  options.max_gpu_pod_age = absl::Hours(6);
  std::vector<Finding> findings;
  AddJobHygieneFindings(*snap, options, findings);
  // train-llama-x7k2p started at 08:00 (6h30m ago), eval-0 at 09:00 (5h30m).
  EXPECT_EQ(Objects(findings),
            (std::vector<std::string>{"gpu-pod-long-running pod/research/notebook-alice",
                                      "gpu-pod-long-running pod/ml/train-llama-x7k2p"}));
  EXPECT_NE(findings[1].message.find("for 6h30m, longer than --max-gpu-pod-age 6h0m"),
            std::string::npos)
      << findings[1].message;
}

}  // namespace
}  // namespace gpunode::cluster
