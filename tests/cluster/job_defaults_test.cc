// The webhook's opt-in defaults (/defaults) on AdmissionReviews of pods and Jobs.
#include "absl/strings/escaping.h"
#include "build_paths.h"
#include "cluster/gpu_job_defaults.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_support.h"

namespace gpunode::cluster {
namespace {

using json = nlohmann::json;

json ReviewJson(const std::string& name) {
  return json::parse(
      gpunode::testing::ReadText(std::string(build_paths::kClusterFixtures) + "/" + name));
}

const JobDefaults kDefaults{.active_deadline_seconds = 86400, .ttl_seconds = 3600};

// Namespace "ci" opted in; every other did not. Records the namespaces asked about.
struct Namespaces {
  std::vector<std::string> asked;
  NamespaceOptedIn Fn() {
    return [this](std::string_view ns) -> absl::StatusOr<bool> {
      asked.emplace_back(ns);
      return ns == "ci";
    };
  }
};

json Respond(const json& review, const JobDefaults& defaults, const NamespaceOptedIn& opted_in) {
  AdmissionReply reply = ApplyJobDefaults(review.dump(), defaults, opted_in);
  EXPECT_EQ(reply.http_status, 200) << reply.body;
  json response = json::parse(reply.body)["response"];
  EXPECT_EQ(response["uid"], review["request"]["uid"]);
  EXPECT_TRUE(response["allowed"].get<bool>());
  return response;
}

json Patched(const json& review, const json& response) {
  std::string patch;
  EXPECT_TRUE(absl::Base64Unescape(response["patch"].get<std::string>(), &patch));
  return review["request"]["object"].patch(json::parse(patch));
}

TEST(JobDefaultsTest, JobPodInOptedInNamespaceGetsTheDeadlineAndAWarning) {
  Namespaces ns;
  json review = ReviewJson("admission-gpu-job-pod.json");
  json response = Respond(review, kDefaults, ns.Fn());
  EXPECT_EQ(response["patchType"], "JSONPatch");
  EXPECT_EQ(Patched(review, response)["spec"]["activeDeadlineSeconds"], 86400);
  EXPECT_EQ(response["warnings"], json::array({"gpunode: set spec.activeDeadlineSeconds=86400 "
                                               "(24h), the default of namespace ci "
                                               "(gpunode.io/gpu-job-defaults=enabled)"}));
  EXPECT_EQ(ns.asked, std::vector<std::string>{"ci"});
}

TEST(JobDefaultsTest, BarePodGetsItToo) {
  json review = ReviewJson("admission-gpu-job-pod.json");
  review["request"]["object"]["metadata"].erase("ownerReferences");
  Namespaces ns;
  json response = Respond(review, kDefaults, ns.Fn());
  EXPECT_EQ(Patched(review, response)["spec"]["activeDeadlineSeconds"], 86400);
}

TEST(JobDefaultsTest, JobInOptedInNamespaceGetsTheTtl) {
  Namespaces ns;
  json review = ReviewJson("admission-gpu-job.json");
  json response = Respond(review, kDefaults, ns.Fn());
  json job = Patched(review, response);
  EXPECT_EQ(job["spec"]["ttlSecondsAfterFinished"], 3600);
  EXPECT_FALSE(job["spec"].contains("activeDeadlineSeconds"));
  EXPECT_EQ(response["warnings"][0],
            "gpunode: set spec.ttlSecondsAfterFinished=3600 (1h), the default of namespace ci "
            "(gpunode.io/gpu-job-defaults=enabled)");
}

TEST(JobDefaultsTest, NothingChangesOutsideOptedInNamespaces) {
  for (const char* fixture : {"admission-gpu-job-pod.json", "admission-gpu-job.json"}) {
    json review = ReviewJson(fixture);
    review["request"]["namespace"] = "ml";
    review["request"]["object"]["metadata"]["namespace"] = "ml";
    Namespaces ns;
    json response = Respond(review, kDefaults, ns.Fn());
    EXPECT_FALSE(response.contains("patch")) << fixture;
    EXPECT_FALSE(response.contains("warnings")) << fixture;
    EXPECT_EQ(ns.asked, std::vector<std::string>{"ml"});
  }
}

TEST(JobDefaultsTest, ValuesAlreadySetAreLeftAlone) {
  json pod = ReviewJson("admission-gpu-job-pod.json");
  pod["request"]["object"]["spec"]["activeDeadlineSeconds"] = 600;
  json job = ReviewJson("admission-gpu-job.json");
  job["request"]["object"]["spec"]["ttlSecondsAfterFinished"] = 0;  // zero is a value too
  for (const json& review : {pod, job}) {
    Namespaces ns;
    json response = Respond(review, kDefaults, ns.Fn());
    EXPECT_FALSE(response.contains("patch")) << response;
    EXPECT_TRUE(ns.asked.empty()) << "nothing to add, so no namespace lookup";
  }
}

TEST(JobDefaultsTest, ControllersThatRunForeverAndCpuWorkAreLeftAlone) {
  Namespaces ns;
  // A ReplicaSet's pod: a deadline would make the Deployment kill and recreate it forever.
  json replicaset_pod = ReviewJson("admission-gpu-pod.json");
  replicaset_pod["request"]["namespace"] = "ci";
  EXPECT_FALSE(Respond(replicaset_pod, kDefaults, ns.Fn()).contains("patch"));
  json cpu_job = ReviewJson("admission-gpu-job.json");
  cpu_job["request"]["object"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {
      {"requests", {{"cpu", "2"}}}};
  EXPECT_FALSE(Respond(cpu_job, kDefaults, ns.Fn()).contains("patch"));
  // An UPDATE is never changed.
  json update = ReviewJson("admission-gpu-job.json");
  update["request"]["operation"] = "UPDATE";
  EXPECT_FALSE(Respond(update, kDefaults, ns.Fn()).contains("patch"));
  EXPECT_TRUE(ns.asked.empty());
  // Without the flag for it, nothing is added.
  EXPECT_FALSE(Respond(ReviewJson("admission-gpu-job.json"),
                       JobDefaults{.active_deadline_seconds = 60, .ttl_seconds = std::nullopt},
                       ns.Fn())
                   .contains("patch"));
}

TEST(JobDefaultsTest, UnreadableNamespaceChangesNothingAndSaysSo) {
  json response = Respond(ReviewJson("admission-gpu-job.json"), kDefaults, [](std::string_view) {
    return absl::StatusOr<bool>(absl::PermissionDeniedError("GET /api/v1/namespaces/ci: 403"));
  });
  EXPECT_FALSE(response.contains("patch"));
  EXPECT_EQ(response["warnings"][0],
            "gpunode: no default ttlSecondsAfterFinished added: cannot read namespace ci's labels "
            "(GET /api/v1/namespaces/ci: 403)");
}

TEST(JobDefaultsTest, NotAnAdmissionReviewIs400) {
  EXPECT_EQ(ApplyJobDefaults("{}", kDefaults, [](std::string_view) { return true; }).http_status,
            400);
}

}  // namespace
}  // namespace gpunode::cluster
