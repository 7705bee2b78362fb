// The GPU job hygiene and image pull findings, the prepull DaemonSet and the webhook's opt-in
// defaults, through the real binary: on snapshot files, and against the API server double.
#include <algorithm>
#include <csignal>
#include <thread>

#include "cli_support.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"
#include "test_support.h"

namespace gpunode::testing {
namespace {

using json = nlohmann::json;

// The findings of an `audit -o json`, as "id object".
std::vector<std::string> Findings(const std::string& out) {
  std::vector<std::string> found;
  json report = json::parse(out, nullptr, false);
  if (report.is_discarded()) return {"(not JSON) " + out};
  for (const json& f : report["findings"]) {
    found.push_back(f["id"].get<std::string>() + " " + f["object"].get<std::string>());
  }
  return found;
}

json FindingOf(const std::string& out, const std::string& id, const std::string& object) {
  json report = json::parse(out);
  for (const json& f : report["findings"]) {
    if (f["id"] == id && f["object"] == object) return f;
  }
  return json();
}

TEST(HygieneCliTest, JobFindingsNameTheJobOnceWithEvidenceAndFix) {
  ProcessResult r =
      Gpunode({"cluster", "audit", "-f", ClusterFixture("gpu-pod-no-deadline.json"), "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The Job's own pod and the Deployment's pod are not reported; the bare pod with a deadline
  // neither.
  EXPECT_EQ(Findings(r.out), (std::vector<std::string>{
                                 "gpu-pod-no-deadline job/ml/train-llama",
                                 "gpu-pod-no-deadline pod/research/notebook-alice",
                             }));
  json job = FindingOf(r.out, "gpu-pod-no-deadline", "job/ml/train-llama");
  EXPECT_EQ(job["severity"], "warning");
  EXPECT_NE(job["message"].get<std::string>().find(
                "Job ml/train-llama runs pods holding 4 nvidia.com/gpu with neither "
                "spec.activeDeadlineSeconds nor spec.template.spec.activeDeadlineSeconds"),
            std::string::npos)
      << job;
  EXPECT_NE(job["fix"].get<std::string>().find("set spec.activeDeadlineSeconds"),
            std::string::npos);

  r = Gpunode({"cluster", "audit", "-f", ClusterFixture("gpu-job-retries-on-disruption.json"), "-o",
               "json"});
  json retries = FindingOf(r.out, "gpu-job-retries-on-disruption", "job/ml/train-bert");
  EXPECT_NE(retries["message"].get<std::string>().find(
                "retries failed pods up to 6 times (spec.backoffLimit 6, the default)"),
            std::string::npos)
      << retries;
  EXPECT_NE(retries["fix"].get<std::string>().find(
                "podFailurePolicy: {rules: [{action: Ignore, onPodConditions: [{type: "
                "DisruptionTarget}]}]}"),
            std::string::npos);

  r = Gpunode({"cluster", "audit", "-f", ClusterFixture("gpu-cronjob.json"), "-o", "json"});
  EXPECT_EQ(Findings(r.out), (std::vector<std::string>{
                                 "gpu-job-no-ttl cronjob/ci/nightly-bench",
                                 "gpu-job-retries-on-disruption cronjob/ci/nightly-bench",
                                 "gpu-pod-no-deadline cronjob/ci/nightly-bench",
                             }));
  EXPECT_NE(FindingOf(r.out, "gpu-job-no-ttl", "cronjob/ci/nightly-bench")["message"]
                .get<std::string>()
                .find("has no spec.jobTemplate.spec.ttlSecondsAfterFinished"),
            std::string::npos);
}

TEST(HygieneCliTest, LongRunningGpuPodsAreReportedOnlyWhenAskedAndWhereAsked) {
  std::vector<std::string> audit = {
      "cluster",           "audit", "-f", ClusterFixture("gpu-pod-long-running.json"), "-o", "json",
      "--max-gpu-pod-age", "6h"};
  ProcessResult all = Gpunode(audit);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(Findings(all.out), (std::vector<std::string>{
                                   "gpu-pod-long-running pod/ci/pr-1234-tests-8h2kd",
                                   "gpu-pod-long-running pod/ci/pr-1240-tests-m3n8q",
                                   "gpu-pod-long-running pod/serving/infer-7b9d6c5f4-p2r8s",
                               }));
  audit.insert(audit.end(), {"--age-namespace", "ci"});
  ProcessResult ci = Gpunode(audit);
  EXPECT_EQ(Findings(ci.out), (std::vector<std::string>{
                                  "gpu-pod-long-running pod/ci/pr-1234-tests-8h2kd",
                                  "gpu-pod-long-running pod/ci/pr-1240-tests-m3n8q",
                              }));
  std::string message =
      FindingOf(ci.out, "gpu-pod-long-running", "pod/ci/pr-1234-tests-8h2kd")["message"];
  EXPECT_NE(message.find("pod ci/pr-1234-tests-8h2kd (Job pr-1234-tests) has held 1 "
                         "nvidia.com/gpu on node gpu-a for "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("longer than --max-gpu-pod-age 6h0m"), std::string::npos) << message;

  ProcessResult bad =
      Gpunode({"cluster", "audit", "-f", ClusterFixture("gpu-pod-long-running.json"),
               "--age-namespace", "ci"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--max-gpu-pod-age"), std::string::npos) << bad.err;
}

// Prometheus that cannot be asked (nothing listens on port 1, or it answers 503) costs gpu-pod-idle
// alone: the other findings are reported and decide the exit code, as without --prometheus, and a
// note says why.
TEST(HygieneCliTest, AnUnreachablePrometheusSkipsOnlyTheIdleFinding) {
  std::vector<std::string> audit = {"cluster", "audit", "-f", ClusterFixture("gpu-unhealthy.json"),
                                    "-o",      "json"};
  ProcessResult without = Gpunode(audit);
  ASSERT_EQ(without.exit_code, 1) << without.err;
  ASSERT_FALSE(Findings(without.out).empty());
  audit.insert(audit.end(), {"--prometheus", "http://127.0.0.1:1", "--request-timeout", "5s"});
  ProcessResult unreachable = Gpunode(audit);
  EXPECT_EQ(unreachable.exit_code, 1) << unreachable.err;
  EXPECT_EQ(Findings(unreachable.out), Findings(without.out));
  EXPECT_NE(unreachable.err.find("gpunode: note: gpu-pod-idle is skipped, Prometheus cannot be "
                                 "asked: --prometheus http://127.0.0.1:1: "),
            std::string::npos)
      << unreachable.err;

  // A Prometheus that answers 503 (overloaded, or a proxy with no backend) is the same.
  httplib::Server busy;
  busy.Get("/api/v1/query",
           [](const httplib::Request&, httplib::Response& res) { res.status = 503; });
  int port = busy.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&busy] { busy.listen_after_bind(); });
  while (!busy.is_running()) std::this_thread::yield();
  audit[audit.size() - 3] = "http://127.0.0.1:" + std::to_string(port);
  ProcessResult unavailable = Gpunode(audit);
  busy.stop();
  serving.join();
  EXPECT_EQ(unavailable.exit_code, 1) << unavailable.err;
  EXPECT_EQ(Findings(unavailable.out), Findings(without.out));
  EXPECT_NE(unavailable.err.find("gpu-pod-idle is skipped, Prometheus cannot be asked: "
                                 "--prometheus http://127.0.0.1:" +
                                 std::to_string(port) + ": GET /api/v1/query: 503"),
            std::string::npos)
      << unavailable.err;
}

TEST(HygieneCliTest, SlowAndFailingImagePullsOnGpuNodes) {
  ProcessResult r =
      Gpunode({"cluster", "audit", "-f", ClusterFixture("slow-image-pull.json"), "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> messages;
  json report = json::parse(r.out);
  for (const json& f : report["findings"]) messages.push_back(f["message"]);
  // The 5-minute pull on the CPU node, the fast ones and the crash loop's back-off are not there.
  EXPECT_EQ(messages,
            (std::vector<std::string>{
                "pulls of image nvcr.io/nvidia/pytorch:24.04-py3 on GPU node gpu-a have failed "
                "47 time(s) over 10m5s (latest: back-off, pod ml/eval-0)",
                "pod ml/train-llama-0 waited 3m12.5s for image nvcr.io/nvidia/pytorch:24.05-py3 "
                "on GPU node gpu-a (over --slow-pull 1m)",
                "pod ml/train-gpt-0 waited 4m1.9s, 2m5.2s pulling for image "
                "nvcr.io/nvidia/nemo:24.05 on GPU node gpu-b (over --slow-pull 1m)",
            }))
      << r.out;
  json slow = FindingOf(r.out, "slow-image-pull", "node/gpu-b");
  EXPECT_NE(slow["fix"].get<std::string>().find(
                "gpunode cluster prepull nvcr.io/nvidia/nemo:24.05 --selector"),
            std::string::npos);

  ProcessResult patient = Gpunode({"cluster", "audit", "-f", ClusterFixture("slow-image-pull.json"),
                                   "-o", "json", "--slow-pull", "5m"});
  EXPECT_EQ(Findings(patient.out), (std::vector<std::string>{"slow-image-pull node/gpu-a"}));
}

class HygieneLiveTest : public LiveApiServerTest {};

TEST_F(HygieneLiveTest, AuditListsJobsCronJobsAndPodEventsPageByPage) {
  ASSERT_TRUE(server_->LoadList(ClusterFixture("gpu-cronjob.json")));
  ASSERT_TRUE(server_->LoadList(ClusterFixture("slow-image-pull.json")));
  // More Jobs than one page holds (500), each without a TTL.
  for (int i = 0; i < 520; ++i) {
    json job = json::parse(ReadText(ClusterFixture("gpu-job-no-ttl.json")))["items"][1];
    job["metadata"]["name"] = "eval-" + std::to_string(1000 + i);
    server_->AddObject(job);
  }
  ProcessResult live = Live({"cluster", "audit", "-o", "json"});
  ASSERT_EQ(live.exit_code, 0) << live.err;
  std::vector<std::string> found = Findings(live.out);
  EXPECT_EQ(
      std::count_if(found.begin(), found.end(),
                    [](const std::string& f) { return f.rfind("gpu-job-no-ttl job/", 0) == 0; }),
      520);
  for (const char* expected :
       {"gpu-pod-no-deadline cronjob/ci/nightly-bench", "slow-image-pull node/gpu-a"}) {
    EXPECT_NE(std::find(found.begin(), found.end(), expected), found.end()) << expected;
  }
  EXPECT_EQ(server_->CountRequests("GET", "/apis/batch/v1/jobs"), 2);
  EXPECT_EQ(server_->CountRequests("GET", "/apis/batch/v1/cronjobs"), 1);
  bool events_filtered = false;
  for (const ApiServerDouble::Request& req : server_->Requests()) {
    if (req.path == "/api/v1/events") {
      events_filtered = req.query.count("fieldSelector") &&
                        req.query.at("fieldSelector") == "involvedObject.kind=Pod";
    }
  }
  EXPECT_TRUE(events_filtered);
}

TEST_F(HygieneLiveTest, AuditGoesOnWithoutPermissionForJobsOrEvents) {
  ASSERT_TRUE(server_->LoadList(ClusterFixture("slow-image-pull.json")));
  ASSERT_TRUE(server_->LoadList(ClusterFixture("gpu-job-no-ttl.json")));
  server_->FailNext("GET", "/apis/batch/v1/jobs", 403, 1);
  server_->FailNext("GET", "/api/v1/events", 403, 1);
  ProcessResult r = Live({"cluster", "audit", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Findings(r.out), std::vector<std::string>{}) << r.out;
  EXPECT_NE(r.err.find("gpunode: note: findings that need these are skipped: jobs: GET "
                       "/apis/batch/v1/jobs"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("skipped: events: GET /api/v1/events"), std::string::npos) << r.err;
}

TEST(PrepullCliTest, PrintsALeastPrivilegeDaemonSet) {
  ProcessResult r = Gpunode({"cluster", "prepull", "nvcr.io/nvidia/pytorch:24.05-py3",
                             "nvcr.io/nvidia/nemo:24.05", "--selector",
                             "nvidia.com/gpu.present=true,pool!=spot,!cordoned"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json ds = json::parse(r.out);
  EXPECT_EQ(ds["kind"], "DaemonSet");
  EXPECT_EQ(ds["apiVersion"], "apps/v1");
  EXPECT_FALSE(ds["metadata"].contains("namespace"));
  const json& spec = ds["spec"]["template"]["spec"];
  ASSERT_EQ(spec["initContainers"].size(), 2u);
  EXPECT_EQ(spec["initContainers"][1]["image"], "nvcr.io/nvidia/nemo:24.05");
  EXPECT_EQ(spec["initContainers"][0]["command"], json::parse(R"(["/bin/sh","-c","true"])"));
  EXPECT_EQ(spec["containers"][0]["image"], "registry.k8s.io/pause:3.10");
  EXPECT_EQ(spec["tolerations"],
            json::parse(R"([{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}])"));
  EXPECT_EQ(spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"][0]["matchExpressions"],
            json::parse(R"([{"key":"nvidia.com/gpu.present","operator":"In","values":["true"]},
                            {"key":"pool","operator":"NotIn","values":["spot"]},
                            {"key":"cordoned","operator":"DoesNotExist"}])"));
  EXPECT_FALSE(spec["automountServiceAccountToken"].get<bool>());
  EXPECT_TRUE(spec["securityContext"]["runAsNonRoot"].get<bool>());
  for (const json& c : {spec["initContainers"][0], spec["containers"][0]}) {
    EXPECT_FALSE(c["securityContext"]["allowPrivilegeEscalation"].get<bool>());
    EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], json::array({"ALL"}));
    EXPECT_EQ(c["resources"]["limits"]["memory"], "64Mi");
  }

  ProcessResult custom =
      Gpunode({"cluster", "prepull", "gcr.io/distroless/base", "--command", "/busybox/true"});
  EXPECT_EQ(json::parse(custom.out)["spec"]["template"]["spec"]["initContainers"][0]["command"],
            json::array({"/busybox/true"}));
  ProcessResult bad = Gpunode({"cluster", "prepull", "img", "--selector", "tier in (a,b)"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--selector: \"tier in (a\": set expressions are not supported"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(Gpunode({"cluster", "prepull"}).exit_code, 2);
}

TEST_F(HygieneLiveTest, PrepullAppliesWaitsReplacesAndDeletes) {
  // The DaemonSet controller's part: once the DaemonSet has been read twice, 3 nodes run it.
  int gets = 0;
  server_->OnRequest([&](const ApiServerDouble::Request& req) {
    if (req.method == "GET" &&
        req.path == "/apis/apps/v1/namespaces/ml/daemonsets/gpunode-prepull" && ++gets == 2) {
      server_->SetDaemonSetStatus("ml", "gpunode-prepull", 3, 3, 3);
    }
  });
  ProcessResult applied = Live({"cluster", "prepull", "nvcr.io/nvidia/pytorch:24.05-py3", "--apply",
                                "--wait", "--poll-interval", "20ms", "--timeout", "30s"});
  EXPECT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  EXPECT_NE(applied.out.find("daemonset ml/gpunode-prepull created\n"), std::string::npos)
      << applied.out;
  EXPECT_NE(applied.out.find("images present on all 3 selected node(s)\n"), std::string::npos)
      << applied.out;
  ASSERT_TRUE(server_->DaemonSet("ml", "gpunode-prepull").has_value());
  EXPECT_EQ(server_->CountRequests("POST", "/apis/apps/v1/namespaces/ml/daemonsets"), 1);

  // A rerun with another image replaces it (409 on create, then PUT); the new generation is not
  // rolled out yet, so --wait times out.
  server_->OnRequest(nullptr);
  ProcessResult rerun = Live({"cluster", "prepull", "nvcr.io/nvidia/nemo:24.05", "--apply",
                              "--wait", "--poll-interval", "20ms", "--timeout", "200ms"});
  EXPECT_EQ(rerun.exit_code, 1) << rerun.out << rerun.err;
  EXPECT_NE(rerun.out.find("daemonset ml/gpunode-prepull replaced\n"), std::string::npos)
      << rerun.out;
  EXPECT_NE(rerun.out.find("timed out after 200ms"), std::string::npos) << rerun.out;
  json ds = *server_->DaemonSet("ml", "gpunode-prepull");
  EXPECT_EQ(ds["metadata"]["generation"], 2);
  EXPECT_EQ(ds["spec"]["template"]["spec"]["initContainers"][0]["image"],
            "nvcr.io/nvidia/nemo:24.05");
  EXPECT_EQ(server_->CountRequests("PUT", "/apis/apps/v1/namespaces/ml/daemonsets/"), 1);

  ProcessResult deleted = Live({"cluster", "prepull", "--delete"});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_EQ(deleted.out, "daemonset ml/gpunode-prepull deleted\n");
  EXPECT_FALSE(server_->DaemonSet("ml", "gpunode-prepull").has_value());
  ProcessResult again = Live({"cluster", "prepull", "--delete"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "daemonset ml/gpunode-prepull not found: nothing to delete\n");
}

TEST_F(HygieneLiveTest, WebhookDefaultsOnlyInOptedInNamespaces) {
  server_->AddObject(
      {{"apiVersion", "v1"},
       {"kind", "Namespace"},
       {"metadata",
        {{"name", "ci"},
         {"labels",
          {{"gpunode.io/gpu-job-defaults", "enabled"}, {"kubernetes.io/metadata.name", "ci"}}}}}});
  server_->AddObject(
      {{"apiVersion", "v1"},
       {"kind", "Namespace"},
       {"metadata", {{"name", "ml"}, {"labels", {{"kubernetes.io/metadata.name", "ml"}}}}}});
  BackgroundProcess webhook(
      {kGpunodeBinary, "webhook", "--tls-cert", dir_->path() + "/tls.crt", "--tls-key",
       dir_->path() + "/tls.key", "--listen", "127.0.0.1:0", "--default-active-deadline", "24h",
       "--default-ttl", "1h", "--kubeconfig", kubeconfig_},
      BackgroundProcess::Options{.stdout_pipe = true});
  std::string line;
  ASSERT_TRUE(webhook.ReadLine(line));
  const std::string prefix = "gpunode webhook listening on port ";
  ASSERT_EQ(line.rfind(prefix, 0), 0u) << line;
  httplib::SSLClient client("127.0.0.1", std::stoi(line.substr(prefix.size())));
  client.set_ca_cert_path((dir_->path() + "/ca.crt").c_str());
  client.enable_server_certificate_verification(true);

  json review = json::parse(ReadText(ClusterFixture("admission-gpu-job-pod.json")));
  auto post = [&](const std::string& ns) {
    review["request"]["namespace"] = ns;
    review["request"]["object"]["metadata"]["namespace"] = ns;
    httplib::Result r = client.Post("/defaults", review.dump(), "application/json");
    return r ? json::parse(r->body)["response"] : json();
  };
  json opted = post("ci");
  EXPECT_EQ(opted["patchType"], "JSONPatch") << opted;
  EXPECT_EQ(opted["warnings"][0],
            "gpunode: set spec.activeDeadlineSeconds=86400 (24h), the default of namespace ci "
            "(gpunode.io/gpu-job-defaults=enabled)");
  json other = post("ml");
  EXPECT_TRUE(other["allowed"].get<bool>());
  EXPECT_FALSE(other.contains("patch")) << other;
  EXPECT_FALSE(other.contains("warnings")) << other;
  // Namespace labels are remembered: a second pod in ci costs no request.
  post("ci");
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/namespaces/ci"), 1);
  EXPECT_EQ(webhook.Stop(SIGTERM), 0);
}

}  // namespace
}  // namespace gpunode::testing
