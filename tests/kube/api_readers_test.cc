// The readers of what the API server answers (api_object.h and the one-object readers on it):
// what they keep of good answers, and the one line a wrong type or a broken answer gives.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kube/admission_request.h"
#include "kube/api_object.h"
#include "kube/api_status.h"
#include "kube/daemonset_view.h"
#include "kube/event_reader.h"
#include "kube/job_status.h"
#include "kube/lease_view.h"
#include "kube/object_meta.h"
#include "kube/pod_status.h"

namespace gpunode::kube {
namespace {

using ::testing::HasSubstr;

// The error's text, or "ok".
template <typename T>
std::string ErrorOf(const absl::StatusOr<T>& read) {
  return read.ok() ? "ok" : std::string(read.status().message());
}
std::string ErrorOf(const absl::Status& status) {
  return status.ok() ? "ok" : std::string(status.message());
}

TEST(ApiObjectTest, SaysWhatIsWrongWithTheDocument) {
  auto nothing = [](od::object&, const JsonWalk&) { return absl::OkStatus(); };
  EXPECT_EQ(ErrorOf(ReadApiObject("{}", "GET /x", "Job", nothing)), "ok");
  std::string broken = ErrorOf(ReadApiObject("<html>", "GET /x", "Job", nothing));
  EXPECT_THAT(broken, HasSubstr("GET /x: "));
  EXPECT_THAT(broken, HasSubstr(kFixApiAnswer));
  EXPECT_THAT(ErrorOf(ReadApiObject("[1]", "GET /x", "Job", nothing)),
              HasSubstr("GET /x: not a JSON object (expected a Job)"));
  EXPECT_THAT(ErrorOf(ReadApiObject("{} {}", "GET /x", "Job", nothing)),
              HasSubstr("unexpected content after the JSON object"));
  EXPECT_EQ(std::count(broken.begin(), broken.end(), '\n'), 0);
}

TEST(ApiObjectTest, ListPagesNameTheirItems) {
  std::string token;
  std::vector<std::string> names;
  absl::Status read = ReadApiList(
      R"({"metadata":{"continue":"abc"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})",
      "GET /api/v1/pods", "Pod", token, [&](od::object& item, const JsonWalk& walk) {
        return walk.ForEachField(item, "", [&](const FieldKey& key, od::value& val) {
          if (key != "metadata") return absl::OkStatus();
          return walk.ForEachField(val, "metadata", [&](const FieldKey& key, od::value& val) {
            if (key != "name") return absl::OkStatus();
            std::string name;
            RETURN_IF_ERROR(walk.ReadStringCopy(val, "metadata.name", name));
            names.push_back(name);
            return absl::OkStatus();
          });
        });
      });
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(token, "abc");
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  absl::Status bad = ReadApiList(R"({"items":[{}, 3]})", "GET /api/v1/pods", "Pod", token,
                                 [](od::object&, const JsonWalk&) { return absl::OkStatus(); });
  EXPECT_THAT(ErrorOf(bad),
              HasSubstr("GET /api/v1/pods: List object: items[1]: expected an object"));
  EXPECT_EQ(token, "");
}

TEST(ApiStatusTest, ReadsWordsCausesAndRetry) {
  absl::StatusOr<ApiStatus> status = ReadApiStatus(
      R"({"kind":"Status","status":"Failure","message":"Cannot evict pod","reason":"TooManyRequests",
          "details":{"causes":[{"reason":"DisruptionBudget","message":"needs 2 healthy"},{"reason":"x"}],
                     "retryAfterSeconds":10},"code":429})",
      "POST /evict");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->message, "Cannot evict pod");
  EXPECT_EQ(status->reason, "TooManyRequests");
  EXPECT_EQ(status->cause_messages, (std::vector<std::string>{"needs 2 healthy"}));
  EXPECT_EQ(status->retry_after_seconds, 10);
}

TEST(ApiStatusTest, MissingFieldsAreEmpty) {
  absl::StatusOr<ApiStatus> status = ReadApiStatus(R"({"kind":"Status","details":null})", "s");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->message, "");
  EXPECT_TRUE(status->cause_messages.empty());
  EXPECT_EQ(status->retry_after_seconds, 0);
}

TEST(ApiStatusTest, WrongTypesNameTheField) {
  EXPECT_EQ(ErrorOf(ReadApiStatus(R"({"details":{"causes":{}}})", "POST /evict")),
            std::string("POST /evict: Status object: details.causes: expected an array; ") +
                std::string(kFixApiAnswer));
  EXPECT_THAT(ErrorOf(ReadApiStatus(R"({"details":{"retryAfterSeconds":"10"}})", "s")),
              HasSubstr("details.retryAfterSeconds: expected an integer"));
  EXPECT_THAT(ErrorOf(ReadApiStatus(R"({"message":{}})", "s")),
              HasSubstr("message: expected a string"));
}

constexpr std::string_view kJob = R"({
  "kind":"Job","metadata":{"name":"m","namespace":"ops","annotations":{"a":"1"}},
  "status":{"succeeded":1,"conditions":[
    {"type":"Complete","status":"True"},
    {"type":"Failed","status":"False","reason":"BackoffLimitExceeded","message":"too many"}]}})";

TEST(JobStatusTest, ReadsAnnotationsConditionsAndCounts) {
  absl::StatusOr<JobStatus> job = ReadJobStatus(kJob, "GET /job");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->Annotation("a"), "1");
  EXPECT_EQ(job->Annotation("b"), "");
  EXPECT_EQ(job->succeeded, 1);
  EXPECT_NE(job->TrueCondition("Complete"), nullptr);
  EXPECT_EQ(job->TrueCondition("Failed"), nullptr);
  ASSERT_EQ(job->conditions.size(), 2u);
  EXPECT_EQ(job->conditions[1].reason, "BackoffLimitExceeded");
  EXPECT_EQ(job->conditions[1].message, "too many");
}

TEST(JobStatusTest, MissingStatusIsNotStarted) {
  absl::StatusOr<JobStatus> job = ReadJobStatus(R"({"kind":"Job"})", "GET /job");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->succeeded, 0);
  EXPECT_TRUE(job->conditions.empty());
}

TEST(JobStatusTest, WrongTypesNameTheJobAndField) {
  EXPECT_THAT(
      ErrorOf(ReadJobStatus(
          R"({"metadata":{"name":"m","namespace":"ops"},"status":{"succeeded":"1"}})", "GET /job")),
      HasSubstr("GET /job: job ops/m: status.succeeded: expected an integer"));
  EXPECT_THAT(ErrorOf(ReadJobStatus(R"({"status":{"conditions":[{"type":7}]}})", "GET /job")),
              HasSubstr("status.conditions[].type: expected a string"));
  EXPECT_THAT(ErrorOf(ReadJobStatus(R"({"metadata":{"annotations":{"a":1}}})", "GET /job")),
              HasSubstr("metadata.annotations"));
}

constexpr std::string_view kDaemonSet = R"({
  "kind":"DaemonSet","metadata":{"name":"p","namespace":"ops","generation":3,"resourceVersion":"42"},
  "spec":{"template":{"spec":{"nodeSelector":{"gpu":"yes"},"containers":[{"name":"c"}]}}},
  "status":{"observedGeneration":3,"desiredNumberScheduled":2,"numberReady":1,
            "updatedNumberScheduled":2}})";

TEST(DaemonSetViewTest, ReadsRolloutAndTemplate) {
  absl::StatusOr<DaemonSetView> ds = ReadDaemonSet(kDaemonSet, "GET /ds");
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->ns, "ops");
  EXPECT_EQ(ds->name, "p");
  EXPECT_EQ(ds->resource_version, "42");
  EXPECT_EQ(ds->generation, 3);
  EXPECT_EQ(ds->observed_generation, 3);
  EXPECT_EQ(ds->desired_scheduled, 2);
  EXPECT_EQ(ds->ready, 1);
  EXPECT_EQ(ds->updated_scheduled, 2);
  ASSERT_EQ(ds->node_selector.size(), 1u);
  EXPECT_EQ(ds->node_selector[0].first, "gpu");
  EXPECT_EQ(ds->pod_spec_json, R"({"nodeSelector":{"gpu":"yes"},"containers":[{"name":"c"}]})");
}

TEST(DaemonSetViewTest, MissingFieldsAreZeroAndTheTemplateEmpty) {
  absl::StatusOr<DaemonSetView> ds = ReadDaemonSet(R"({"kind":"DaemonSet"})", "GET /ds");
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->desired_scheduled, 0);
  EXPECT_EQ(ds->pod_spec_json, "{}");
  EXPECT_TRUE(ds->node_selector.empty());
}

TEST(DaemonSetViewTest, ListPagesAndWrongTypes) {
  std::vector<DaemonSetView> sets;
  std::string token;
  ASSERT_TRUE(ReadDaemonSetPage(std::string("{\"items\":[") + std::string(kDaemonSet) + "]}",
                                "GET /ds", sets, token)
                  .ok());
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0].name, "p");
  EXPECT_THAT(ErrorOf(ReadDaemonSet(
                  R"({"metadata":{"name":"p","namespace":"ops"},"status":{"numberReady":true}})",
                  "GET /ds")),
              HasSubstr("GET /ds: daemonset ops/p: status.numberReady: expected an integer"));
  EXPECT_THAT(ErrorOf(ReadDaemonSet(R"({"spec":{"template":{"spec":[]}}})", "GET /ds")),
              HasSubstr("spec.template.spec: expected an object"));
}

TEST(PodStatusTest, ReadsPhaseConditionsAndContainers) {
  absl::StatusOr<PodStatus> pod = ReadPodStatus(R"({"kind":"Pod","status":{"phase":"Failed",
      "conditions":[{"type":"PodScheduled","status":"True"}],
      "containerStatuses":[{"name":"c","state":{"terminated":{"exitCode":3,"reason":"Error"}}},
                           {"name":"d","state":{"waiting":{"reason":"ImagePullBackOff",
                                                           "message":"no such image"}}}]}})",
                                                "GET /pod");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->phase, "Failed");
  ASSERT_EQ(pod->conditions.size(), 1u);
  EXPECT_EQ(pod->conditions[0].type, "PodScheduled");
  ASSERT_EQ(pod->containers.size(), 2u);
  EXPECT_TRUE(pod->containers[0].terminated);
  EXPECT_EQ(pod->containers[0].exit_code, 3);
  EXPECT_EQ(pod->containers[0].terminated_reason, "Error");
  EXPECT_FALSE(pod->containers[1].terminated);
  EXPECT_EQ(pod->containers[1].waiting_reason, "ImagePullBackOff");
  EXPECT_EQ(pod->containers[1].waiting_message, "no such image");
}

TEST(PodStatusTest, MissingStatusAndWrongTypes) {
  absl::StatusOr<PodStatus> pod = ReadPodStatus(R"({"kind":"Pod"})", "GET /pod");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->phase, "");
  EXPECT_TRUE(pod->containers.empty());
  EXPECT_THAT(
      ErrorOf(ReadPodStatus(
          R"({"metadata":{"name":"s","namespace":"v"},"status":{"containerStatuses":[{"state":{"terminated":{"exitCode":"3"}}}]}})",
          "GET /pod")),
      HasSubstr("GET /pod: pod v/s: status.containerStatuses[].state.terminated.exitCode: "
                "expected an integer"));
  EXPECT_THAT(ErrorOf(ReadPodStatus(R"({"status":{"phase":1}})", "GET /pod")),
              HasSubstr("status.phase: expected a string"));
}

TEST(ObjectMetaTest, ReadsNameLabelsAndController) {
  absl::StatusOr<ObjectMeta> meta = ReadObjectMeta(
      R"({"metadata":{"name":"rs","namespace":"ml","labels":{"app":"x"},
          "ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"d","uid":"u",
                              "controller":true}]}})",
      "GET /rs", "ReplicaSet");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->name, "rs");
  EXPECT_EQ(meta->ns, "ml");
  EXPECT_EQ(meta->Label("app"), "x");
  EXPECT_EQ(meta->Label("other"), std::nullopt);
  EXPECT_TRUE(meta->has_controller);
  EXPECT_EQ(meta->controller_kind, "Deployment");
  EXPECT_EQ(meta->controller_name, "d");
  EXPECT_EQ(meta->controller_uid, "u");
}

TEST(ObjectMetaTest, MissingMetadataAndWrongTypes) {
  absl::StatusOr<ObjectMeta> meta = ReadObjectMeta("{}", "GET /ns/a", "Namespace");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_FALSE(meta->has_controller);
  EXPECT_TRUE(meta->labels.empty());
  EXPECT_THAT(ErrorOf(ReadObjectMeta(R"({"metadata":{"name":"a","labels":{"k":1}}})", "GET /ns/a",
                                     "Namespace")),
              HasSubstr("GET /ns/a: namespace a: metadata.labels"));
  std::vector<ObjectMeta> pods;
  std::string token;
  ASSERT_TRUE(
      ReadObjectMetaPage(
          R"({"metadata":{"continue":"n"},"items":[{"metadata":{"name":"p","namespace":"q"}}]})",
          "GET /pods", "Pod", pods, token)
          .ok());
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0].ns + "/" + pods[0].name, "q/p");
  EXPECT_EQ(token, "n");
}

TEST(EventPageTest, ReadsEachEvent) {
  std::vector<std::string> seen;
  std::string token;
  absl::Status read = ReadEventPage(
      R"({"kind":"EventList","metadata":{"continue":""},"items":[
          {"metadata":{"name":"e1","namespace":"default","creationTimestamp":"2024-05-01T10:00:00Z"},
           "involvedObject":{"kind":"Node","name":"gpu-a"},"reason":"XidError","message":"Xid 79",
           "lastTimestamp":"2024-05-01T10:01:00Z"}]})",
      "GET /api/v1/events",
      [&](const EventFields& e) {
        seen.push_back(std::string(e.reason) + "|" + std::string(e.message) + "|" +
                       std::string(e.involved_name) + "|" + std::string(e.last) + "|" +
                       std::string(e.created));
      },
      token);
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(seen, (std::vector<std::string>{
                      "XidError|Xid 79|gpu-a|2024-05-01T10:01:00Z|2024-05-01T10:00:00Z"}));
  EXPECT_THAT(ErrorOf(ReadEventPage(
                  R"({"items":[{"metadata":{"name":"e1","namespace":"d"},"message":["x"]}]})",
                  "GET /api/v1/events", [](const EventFields&) {}, token)),
              HasSubstr("GET /api/v1/events: event d/e1: message: expected a string"));
}

constexpr std::string_view kReview =
    R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
  "request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE",
             "namespace":"ml","object":{"metadata":{"generateName":"train-"},"spec":{"containers":[]}}}})";

TEST(LeaseViewTest, WritesBackWhatItReadIncludingAnOperatorsLabels) {
  absl::StatusOr<LeaseView> lease = ReadLease(R"({"kind": "Lease", "metadata": {
      "name": "gpunode-upgrade", "namespace": "gpu-ops", "resourceVersion": "42",
      "labels": {"team": "gpu"}, "annotations": {"owner": "ops@example.com"}},
    "spec": {"holderIdentity": "upgrader-a", "leaseDurationSeconds": 900,
             "renewTime": "2026-11-01T10:00:00.000000Z", "leaseTransitions": 2}})",
                                              "GET lease");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->holder_identity, "upgrader-a");
  EXPECT_EQ(lease->duration_seconds, 900);
  EXPECT_EQ(lease->transitions, 2);
  nlohmann::json written = lease->ToJson();
  EXPECT_EQ(written["metadata"]["resourceVersion"], "42");
  EXPECT_EQ(written["metadata"]["labels"], nlohmann::json({{"team", "gpu"}}));
  EXPECT_EQ(written["metadata"]["annotations"], nlohmann::json({{"owner", "ops@example.com"}}));
  EXPECT_EQ(written["spec"]["renewTime"], "2026-11-01T10:00:00.000000Z");

  absl::StatusOr<LeaseView> wrong =
      ReadLease(R"({"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": "15m"}})", "GET");
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.status().message(), HasSubstr("spec.leaseDurationSeconds"));
}

TEST(AdmissionRequestTest, ReadsTheRequestAndKeepsTheObject) {
  absl::StatusOr<AdmissionRequest> r = ReadAdmissionReview(kReview, "AdmissionReview");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->api_version, "admission.k8s.io/v1");
  EXPECT_EQ(r->uid, "u1");
  EXPECT_TRUE(r->IsCreateOf("Pod"));
  EXPECT_EQ(r->ns, "ml");
  EXPECT_EQ(r->object, R"({"metadata":{"generateName":"train-"},"spec":{"containers":[]}})");
  absl::StatusOr<ClusterSnapshot> snap = ReadAdmissionObject(r->object, "Pod");
  ASSERT_TRUE(snap.ok()) << snap.status();
  ASSERT_EQ(snap->pods.size(), 1u);
  EXPECT_EQ(snap->pods[0].name, "train-<generated>");
}

TEST(AdmissionRequestTest, RefusesWhatIsNotAReview) {
  EXPECT_THAT(ErrorOf(ReadAdmissionReview(R"({"kind":"AdmissionReview"})", "AdmissionReview")),
              HasSubstr("expected an AdmissionReview with a request"));
  EXPECT_THAT(
      ErrorOf(ReadAdmissionReview(R"({"kind":"AdmissionReview","request":{}})", "AdmissionReview")),
      HasSubstr("AdmissionReview request has no uid"));
  EXPECT_THAT(ErrorOf(ReadAdmissionReview(R"({"kind":"AdmissionReview","request":{"uid":1}})",
                                          "AdmissionReview")),
              HasSubstr("AdmissionReview: AdmissionReview object: request.uid: expected a string"));
  EXPECT_THAT(
      ErrorOf(ReadAdmissionReview(R"({"kind":"AdmissionReview","request":{"uid":"u","object":[]}})",
                                  "AdmissionReview")),
      HasSubstr("request.object: expected an object"));
  EXPECT_THAT(ErrorOf(ReadAdmissionObject("", "Pod")), HasSubstr("carries no Pod object"));
}

}  // namespace
}  // namespace gpunode::kube
