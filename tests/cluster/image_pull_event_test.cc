// Kubelet image pull messages and Go durations, as recent kubelets write them.
#include "kube/image_pull_event.h"

#include "gtest/gtest.h"
#include "kube/snapshot_reader.h"

namespace gpunode::kube {
namespace {

TEST(GoDurationTest, ParsesWhatTimeDurationStringPrints) {
  EXPECT_EQ(ParseGoDurationMillis("3m12.5s"), 192500);
  EXPECT_EQ(ParseGoDurationMillis("1h0m2s"), 3602000);
  EXPECT_EQ(ParseGoDurationMillis("812ms"), 812);
  EXPECT_EQ(ParseGoDurationMillis("1.5s"), 1500);
  EXPECT_EQ(ParseGoDurationMillis("0s"), 0);
  EXPECT_EQ(ParseGoDurationMillis("12\xc2\xb5s"), 0);  // µs
  EXPECT_EQ(ParseGoDurationMillis(""), std::nullopt);
  EXPECT_EQ(ParseGoDurationMillis("3 minutes"), std::nullopt);
  EXPECT_EQ(ParseGoDurationMillis("1.2.3s"), std::nullopt);
}

TEST(PullMessageTest, EveryKubeletFormat) {
  // 1.30 and later.
  auto m = ParsePullMessage("Pulled",
                            "Successfully pulled image \"nvcr.io/nvidia/pytorch:24.05-py3\" in "
                            "3m12.5s (3m40s including waiting). Image size: 10212352614 bytes.");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->outcome, PullOutcome::kPulled);
  EXPECT_EQ(m->image, "nvcr.io/nvidia/pytorch:24.05-py3");
  EXPECT_EQ(m->pulled_millis, 192500);
  EXPECT_EQ(m->waited_millis, 220000);
  // 1.25 to 1.29.
  m = ParsePullMessage("Pulled",
                       "Successfully pulled image \"busybox\" in 1.5s (2.5s including "
                       "waiting)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->waited_millis, 2500);
  // Before 1.25.
  m = ParsePullMessage("Pulled", "Successfully pulled image \"busybox:1.36\" in 4.2s");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->image, "busybox:1.36");
  EXPECT_EQ(m->waited_millis, 4200);

  m = ParsePullMessage("Failed",
                       "Failed to pull image \"nvcr.io/x:1\": rpc error: code = "
                       "NotFound desc = not found");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->outcome, PullOutcome::kFailed);
  EXPECT_EQ(m->image, "nvcr.io/x:1");
  m = ParsePullMessage("BackOff", "Back-off pulling image \"nvcr.io/x:1\"");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->outcome, PullOutcome::kBackOff);

  EXPECT_FALSE(
      ParsePullMessage("Pulled", "Container image \"busybox\" already present on machine"));
  EXPECT_FALSE(ParsePullMessage("Failed", "Error: ErrImagePull"));
  EXPECT_FALSE(ParsePullMessage("BackOff", "Back-off restarting failed container main in pod x"));
  EXPECT_FALSE(ParsePullMessage("Pulling", "Pulling image \"busybox\""));
  EXPECT_FALSE(ParsePullMessage("Pulled", "Successfully pulled image \"busybox\" in soon"));
}

TEST(SnapshotJobsTest, ReadsJobsCronJobsAndEventsFromApiListPages) {
  // Items of list pages carry no kind; the list's kind says it.
  auto snap = ReadSnapshotText(R"json({"kind":"JobList","apiVersion":"batch/v1","metadata":{},
    "items":[{"metadata":{"name":"a","namespace":"ml","ownerReferences":[
      {"kind":"CronJob","name":"nightly","controller":true}]},
      "spec":{"backoffLimit":null,"ttlSecondsAfterFinished":0,
        "podFailurePolicy":{"rules":[{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]},
        "template":{"spec":{"activeDeadlineSeconds":60,"containers":[
          {"name":"m","resources":{"limits":{"nvidia.com/gpu":"2"}}}]}}}}]})json",
                               "jobs page");
  ASSERT_TRUE(snap.ok()) << snap.status();
  ASSERT_EQ(snap->jobs.size(), 1u);
  const JobView& job = snap->jobs[0];
  EXPECT_EQ(job.kind, "Job");
  EXPECT_EQ(job.cronjob, "nightly");
  EXPECT_EQ(job.backoff_limit, kDefaultBackoffLimit);
  EXPECT_TRUE(job.ttl_after_finished);
  EXPECT_TRUE(job.ignores_disruptions);
  EXPECT_TRUE(job.template_active_deadline);
  EXPECT_FALSE(job.job_active_deadline);
  EXPECT_EQ(MilliOf(job.gpu_requests, "nvidia.com/gpu"), 2000);

  // A rule with status False does not ignore disruptions.
  snap = ReadSnapshotText(R"json({"kind":"CronJob","apiVersion":"batch/v1","metadata":{"name":"c",
    "namespace":"ci"},"spec":{"jobTemplate":{"spec":{"backoffLimit":0,"podFailurePolicy":{"rules":[
      {"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget","status":"False"}]}]}}}}})json",
                          "cronjob");
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_EQ(snap->jobs[0].kind, "CronJob");
  EXPECT_EQ(snap->jobs[0].backoff_limit, 0);
  EXPECT_FALSE(snap->jobs[0].ignores_disruptions);

  snap = ReadSnapshotText(R"json({"kind":"EventList","apiVersion":"v1","metadata":{},"items":[
    {"metadata":{"name":"e1","namespace":"ml"},"involvedObject":{"kind":"Pod","name":"p",
     "namespace":"ml"},"reason":"Pulled",
     "message":"Successfully pulled image \"img\" in 2m0s (2m0s including waiting)",
     "source":{"component":"kubelet","host":"gpu-a"},"count":1,
     "firstTimestamp":"2024-05-06T09:00:00Z","lastTimestamp":"2024-05-06T09:00:00Z"},
    {"metadata":{"name":"e2","namespace":"ml"},"involvedObject":{"kind":"Pod","name":"p"},
     "reason":"Scheduled","message":"Successfully assigned ml/p to gpu-a"}]})json",
                          "events page");
  ASSERT_TRUE(snap.ok()) << snap.status();
  ASSERT_EQ(snap->image_pulls.size(), 1u);
  EXPECT_EQ(snap->image_pulls[0].node, "gpu-a");
  EXPECT_EQ(snap->image_pulls[0].image, "img");
  EXPECT_EQ(snap->image_pulls[0].waited_millis, 120000);

  auto bad = ReadSnapshotText(R"json({"kind":"Job","apiVersion":"batch/v1","metadata":{"name":"j",
    "namespace":"ml"},"spec":{"backoffLimit":"six"}})json",
                              "job.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(
      bad.status().message(),
      "job.json: job ml/j: spec.backoffLimit: expected an integer; expected what `kubectl get "
      "nodes,pods -A -o json` prints");
}

}  // namespace
}  // namespace gpunode::kube
