#include "cluster/webhook.h"

#include "absl/strings/escaping.h"
#include "build_paths.h"
#include "cluster/webhook_server.h"
#include "gtest/gtest.h"
#include "kube/snapshot_reader.h"
#include "nlohmann/json.hpp"
#include "test_support.h"

namespace gpunode::cluster {
namespace {

using json = nlohmann::json;

std::string Review(const std::string& name) {
  return gpunode::testing::ReadText(std::string(build_paths::kClusterFixtures) + "/" + name);
}

json Response(const AdmissionReply& reply) {
  EXPECT_EQ(reply.http_status, 200) << reply.body;
  json j = json::parse(reply.body);
  EXPECT_EQ(j["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(j["kind"], "AdmissionReview");
  return j["response"];
}

json Patch(const json& response) {
  EXPECT_EQ(response["patchType"], "JSONPatch");
  std::string decoded;
  EXPECT_TRUE(absl::Base64Unescape(response["patch"].get<std::string>(), &decoded));
  return json::parse(decoded);
}

const json kToleration = {
    {"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}};

TEST(MutateTest, AddsTheTolerationsArrayWhenAbsent) {
  json r = Response(Mutate(Review("admission-gpu-pod-no-tolerations.json")));
  EXPECT_EQ(r["uid"], "7c1a9e52-0b6d-4f3e-9a8c-2d4e6f8a0b1c");
  EXPECT_TRUE(r["allowed"].get<bool>());
  json expected = json::array(
      {{{"op", "add"}, {"path", "/spec/tolerations"}, {"value", json::array({kToleration})}}});
  EXPECT_EQ(Patch(r), expected);
  // Applying the patch gives a pod that tolerates the GPU taint.
  json pod = json::parse(Review("admission-gpu-pod-no-tolerations.json"))["request"]["object"];
  EXPECT_EQ(pod.patch(Patch(r))["spec"]["tolerations"][0], kToleration);
}

TEST(MutateTest, AppendsToExistingTolerations) {
  json r = Response(Mutate(Review("admission-gpu-pod.json")));
  json expected =
      json::array({{{"op", "add"}, {"path", "/spec/tolerations/-"}, {"value", kToleration}}});
  EXPECT_EQ(Patch(r), expected);
  json pod = json::parse(Review("admission-gpu-pod.json"))["request"]["object"];
  EXPECT_EQ(pod.patch(Patch(r))["spec"]["tolerations"].size(), 3u);
  // MIG resources count as GPU requests too.
  EXPECT_EQ(Patch(Response(Mutate(Review("admission-mig-pod.json")))), expected);
}

TEST(MutateTest, LeavesAloneWhatNeedsNothing) {
  for (const char* f : {"admission-gpu-pod-tolerated.json", "admission-cpu-pod.json"}) {
    json r = Response(Mutate(Review(f)));
    EXPECT_TRUE(r["allowed"].get<bool>()) << f;
    EXPECT_FALSE(r.contains("patch")) << f;
  }
  json update = json::parse(Review("admission-gpu-pod-no-tolerations.json"));
  update["request"]["operation"] = "UPDATE";
  EXPECT_FALSE(Response(Mutate(update.dump())).contains("patch"));
  EXPECT_EQ(Mutate("not json").http_status, 400);
  EXPECT_EQ(Mutate(R"({"kind":"AdmissionReview","request":{}})").http_status, 400);
}

TEST(ValidateTest, AllowsGoodPods) {
  ClusterLimits limits;
  limits.largest["nvidia.com/gpu"] = 8;
  for (const char* f : {"admission-gpu-pod.json", "admission-cpu-pod.json",
                        "admission-mig-pod.json", "admission-gpu-pod-tolerated.json"}) {
    json r = Response(Validate(Review(f), limits));
    EXPECT_TRUE(r["allowed"].get<bool>()) << f << ": " << r.dump();
  }
}

TEST(ValidateTest, RefusesWithEveryReason) {
  ClusterLimits limits;
  limits.largest["nvidia.com/gpu"] = 8;
  json r = Response(Validate(Review("admission-invalid-gpu-pod.json"), limits));
  EXPECT_EQ(r["uid"], "5f607182-93a4-4b52-9e3f-a4b5c6d7e8f9");
  EXPECT_FALSE(r["allowed"].get<bool>());
  EXPECT_EQ(r["status"]["code"], 403);
  std::string message = r["status"]["message"];
  for (const char* part : {
           "spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: \"2\": must be "
           "equal to nvidia.com/gpu limit of 1",
           "spec.containers[1].resources.limits[nvidia.com/gpu]: Invalid value: \"500m\": must be "
           "an integer",
           "spec.tolerations[0].effect: NoExecute never matches the GPU taint",
           "spec.tolerations[1].key: \"nvidia.com/GPU\" never matches the GPU taint key",
       }) {
    EXPECT_NE(message.find(part), std::string::npos) << part << "\n in: " << message;
  }

  json large = Response(Validate(Review("admission-too-large-pod.json"), limits));
  EXPECT_FALSE(large["allowed"].get<bool>());
  EXPECT_NE(large["status"]["message"].get<std::string>().find(
                "requests 16 nvidia.com/gpu but the largest node has 8"),
            std::string::npos);
  // Without knowing the nodes, size is not judged.
  EXPECT_TRUE(Response(Validate(Review("admission-too-large-pod.json"), {}))["allowed"]);

  json no_limit = json::parse(Review("admission-gpu-pod.json"));
  no_limit["request"]["object"]["spec"]["containers"][0]["resources"]["limits"].erase(
      "nvidia.com/gpu");
  json r2 = Response(Validate(no_limit.dump(), limits));
  EXPECT_NE(r2["status"]["message"].get<std::string>().find(
                "spec.containers[0].resources.limits[nvidia.com/gpu]: Required value"),
            std::string::npos);
}

// A review with members of the wrong JSON type is refused with one line naming the member; one
// inside the object is the snapshot reader's to judge. Either way the webhook answers, never
// crashes.
TEST(MutateTest, MistypedMembersAreAnsweredNotFatal) {
  EXPECT_EQ(Mutate(R"({"kind": {}, "request": {"uid": "u"}})").http_status, 400);
  AdmissionReply refused = Mutate(
      R"({"kind": "AdmissionReview", "apiVersion": 1, "request": {"uid": "u", "kind": "Pod",
          "operation": "CREATE", "object": {"metadata": {"generateName": 7}}}})");
  EXPECT_EQ(refused.http_status, 400);
  EXPECT_NE(refused.body.find("apiVersion: expected a string"), std::string::npos) << refused.body;
  EXPECT_EQ(refused.body.find('\n'), std::string::npos) << refused.body;
  AdmissionReply reply = Mutate(
      R"({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {"uid": "u",
          "kind": {"kind": "Pod"}, "operation": "CREATE",
          "object": {"metadata": {"generateName": 7}}}})");
  EXPECT_EQ(reply.http_status, 200) << reply.body;
}

TEST(ValidateTest, TolerationValuesMustMatchTheNodesTaint) {
  ClusterLimits limits;
  limits.gpu_taint_values = {"present"};
  json r = Response(Validate(Review("admission-wrong-taint-value.json"), limits));
  EXPECT_FALSE(r["allowed"].get<bool>());
  EXPECT_NE(r["status"]["message"].get<std::string>().find(
                "value \"true\" never matches the GPU taint on the nodes (nvidia.com/gpu=present)"),
            std::string::npos);
  limits.gpu_taint_values = {"true"};
  EXPECT_TRUE(Response(Validate(Review("admission-wrong-taint-value.json"), limits))["allowed"]);
}

TEST(WebhookLimitsTest, FromNodes) {
  absl::StatusOr<kube::ClusterSnapshot> s =
      kube::ReadSnapshotFile(std::string(build_paths::kClusterFixtures) + "/mig-and-shared.json");
  ASSERT_TRUE(s.ok());
  ClusterLimits limits = LimitsFromNodes(*s);
  EXPECT_EQ(limits.largest.at("nvidia.com/gpu"), 16);
  EXPECT_EQ(limits.largest.at("nvidia.com/mig-1g.10gb"), 7);
  EXPECT_EQ(limits.gpu_taint_values, std::vector<std::string>{"present"});
}

}  // namespace
}  // namespace gpunode::cluster
