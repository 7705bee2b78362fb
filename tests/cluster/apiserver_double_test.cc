// The API server double's Leases and namespaced Jobs answer as the real API server does: the
// status codes, Status reasons and messages that clients act on, and optimistic concurrency.
#include "harness/apiserver_double.h"

#include <string>

#include "core/system_env.h"
#include "gtest/gtest.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"
#include "test_support.h"

namespace gpunode::kube {
namespace {

using json = nlohmann::json;

constexpr char kLeases[] = "/apis/coordination.k8s.io/v1/namespaces/gpunode-system/leases";
constexpr char kJobs[] = "/apis/batch/v1/namespaces/gpunode-system/jobs";

json NewLease(const std::string& name, const std::string& holder) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"holderIdentity", holder},
            {"leaseDurationSeconds", 60},
            {"renewTime", "2024-05-06T10:00:00.000000Z"}}}};
}

json NewJob(const std::string& name, const std::string& restart_policy) {
  json pod_spec = {{"containers", {{{"name", "install"}, {"image", "driver:550.90.07"}}}}};
  if (!restart_policy.empty()) pod_spec["restartPolicy"] = restart_policy;
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", name}, {"labels", {{"app", "upgrade"}}}}},
          {"spec", {{"backoffLimit", 0}, {"template", {{"spec", pod_spec}}}}}};
}

class ApiServerDoubleTest : public gpunode::testing::TlsApiServerTest {
 protected:
  void SetUp() override {
    TlsApiServerTest::SetUp();
    if (HasFatalFailure()) return;
    ClusterAccess access;
    access.server = server_->url();
    access.ca_pem = gpunode::testing::ReadText(dir_->path() + "/ca.crt");
    access.token = "double-token";
    access.description = "test";
    absl::StatusOr<std::unique_ptr<HttpTransport>> transport = NewCurlTransport(access, {});
    ASSERT_TRUE(transport.ok()) << transport.status();
    RetryPolicy once;
    once.max_attempts = 1;
    client_ = std::make_unique<Client>(std::move(*transport), once, "test", env_);
  }

  // One request, its status code and its body as JSON (null when the body is not JSON).
  std::pair<int, json> Call(const std::string& method, const std::string& path,
                            const json& body = nullptr) {
    HttpRequest request;
    request.method = method;
    request.path = path;
    if (!body.is_null()) {
      request.content_type = "application/json";
      request.body = body.dump();
    }
    absl::StatusOr<HttpResponse> response = client_->SendOnce(request);
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return {0, nullptr};
    return {response->status, json::parse(response->body, nullptr, false)};
  }

  core::SystemEnv env_;
  std::unique_ptr<Client> client_;
};

TEST_F(ApiServerDoubleTest, LeaseIsCreatedOnceAndReadBack) {
  auto [code, created] = Call("POST", kLeases, NewLease("upgrade", "pod-a"));
  ASSERT_EQ(code, 201) << created;
  EXPECT_EQ(created["metadata"]["namespace"], "gpunode-system");
  EXPECT_FALSE(created["metadata"]["uid"].get<std::string>().empty());
  EXPECT_FALSE(created["metadata"]["resourceVersion"].get<std::string>().empty());
  EXPECT_FALSE(created["metadata"]["creationTimestamp"].get<std::string>().empty());
  EXPECT_EQ(created["spec"]["holderIdentity"], "pod-a");

  auto [again, exists] = Call("POST", kLeases, NewLease("upgrade", "pod-b"));
  EXPECT_EQ(again, 409);
  EXPECT_EQ(exists["reason"], "AlreadyExists");
  EXPECT_EQ(exists["message"], "leases.coordination.k8s.io \"upgrade\" already exists");
  EXPECT_EQ(exists["details"],
            (json{{"name", "upgrade"}, {"group", "coordination.k8s.io"}, {"kind", "leases"}}));

  auto [got, read] = Call("GET", std::string(kLeases) + "/upgrade");
  EXPECT_EQ(got, 200);
  EXPECT_EQ(read, created);
  ASSERT_TRUE(server_->Lease("gpunode-system", "upgrade").has_value());
  EXPECT_EQ(server_->Lease("gpunode-system", "upgrade")->at("spec")["holderIdentity"], "pod-a");

  json other_ns = NewLease("upgrade", "pod-a");
  other_ns["metadata"]["namespace"] = "default";
  EXPECT_EQ(Call("POST", kLeases, other_ns).first, 400);
  json not_a_lease = NewLease("other", "pod-a");
  not_a_lease["kind"] = "ConfigMap";
  EXPECT_EQ(Call("POST", kLeases, not_a_lease).first, 400);
  json unnamed = NewLease("", "pod-a");
  auto [invalid, why] = Call("POST", kLeases, unnamed);
  EXPECT_EQ(invalid, 422);
  EXPECT_EQ(why["reason"], "Invalid");
  EXPECT_FALSE(server_->Lease("gpunode-system", "other").has_value());
}

TEST_F(ApiServerDoubleTest, LeaseReplaceNeedsTheResourceVersionItRead) {
  json lease = Call("POST", kLeases, NewLease("upgrade", "pod-a")).second;
  const std::string path = std::string(kLeases) + "/upgrade";

  json renewed = lease;
  renewed["spec"]["renewTime"] = "2024-05-06T10:00:30.000000Z";
  auto [code, stored] = Call("PUT", path, renewed);
  ASSERT_EQ(code, 200) << stored;
  EXPECT_EQ(stored["spec"]["renewTime"], "2024-05-06T10:00:30.000000Z");
  EXPECT_NE(stored["metadata"]["resourceVersion"], lease["metadata"]["resourceVersion"]);
  EXPECT_EQ(stored["metadata"]["uid"], lease["metadata"]["uid"]);

  // A second writer still holding what it read before that renewal loses.
  json taken = lease;
  taken["spec"]["holderIdentity"] = "pod-b";
  auto [conflict, status] = Call("PUT", path, taken);
  EXPECT_EQ(conflict, 409);
  EXPECT_EQ(status["reason"], "Conflict");
  EXPECT_EQ(status["message"],
            "Operation cannot be fulfilled on leases.coordination.k8s.io \"upgrade\": the object "
            "has been modified; please apply your changes to the latest version and try again");
  EXPECT_EQ(server_->Lease("gpunode-system", "upgrade")->at("spec")["holderIdentity"], "pod-a");

  json unversioned = stored;
  unversioned["metadata"].erase("resourceVersion");
  auto [invalid, why] = Call("PUT", path, unversioned);
  EXPECT_EQ(invalid, 422);
  EXPECT_EQ(why["message"],
            "leases.coordination.k8s.io \"upgrade\" is invalid: metadata.resourceVersion: "
            "Invalid value: 0x0: must be specified for an update");

  EXPECT_EQ(Call("PUT", std::string(kLeases) + "/other", stored).first, 400);  // name mismatch
}

TEST_F(ApiServerDoubleTest, LeaseDeletedUnderItsReaderIsAConflictNotARecreation) {
  json lease = Call("POST", kLeases, NewLease("upgrade", "pod-a")).second;
  const std::string path = std::string(kLeases) + "/upgrade";
  auto [deleted, status] = Call("DELETE", path);
  EXPECT_EQ(deleted, 200);
  EXPECT_EQ(status["status"], "Success");
  EXPECT_EQ(status["details"]["uid"], lease["metadata"]["uid"]);
  EXPECT_FALSE(server_->Lease("gpunode-system", "upgrade").has_value());

  auto [missing, not_found] = Call("GET", path);
  EXPECT_EQ(missing, 404);
  EXPECT_EQ(not_found["message"], "leases.coordination.k8s.io \"upgrade\" not found");
  EXPECT_EQ(not_found["details"]["group"], "coordination.k8s.io");
  EXPECT_EQ(Call("DELETE", path).first, 404);

  // The uid it read is a precondition the store checks first.
  auto [conflict, why] = Call("PUT", path, lease);
  EXPECT_EQ(conflict, 409);
  EXPECT_NE(why["message"].get<std::string>().find("Precondition failed: UID in precondition"),
            std::string::npos)
      << why;
  EXPECT_FALSE(server_->Lease("gpunode-system", "upgrade").has_value());
  // Without a uid, a PUT creates a Lease, as its strategy allows.
  auto [created, fresh] = Call("PUT", path, NewLease("upgrade", "pod-b"));
  EXPECT_EQ(created, 201);
  EXPECT_NE(fresh["metadata"]["uid"], lease["metadata"]["uid"]);
}

TEST_F(ApiServerDoubleTest, JobIsCreatedOnceReadListedAndFollowsItsStatus) {
  auto [code, created] = Call("POST", kJobs, NewJob("driver-gpu-a", "Never"));
  ASSERT_EQ(code, 201) << created;
  std::string uid = created["metadata"]["uid"];
  EXPECT_FALSE(uid.empty());
  EXPECT_EQ(created["status"], json::object());
  EXPECT_EQ(created["spec"]["backoffLimit"], 0);
  EXPECT_EQ(created["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"], uid);
  EXPECT_EQ(created["spec"]["template"]["metadata"]["labels"]["job-name"], "driver-gpu-a");

  auto [again, exists] = Call("POST", kJobs, NewJob("driver-gpu-a", "Never"));
  EXPECT_EQ(again, 409);
  EXPECT_EQ(exists["reason"], "AlreadyExists");
  EXPECT_EQ(exists["message"], "jobs.batch \"driver-gpu-a\" already exists");

  ASSERT_EQ(Call("POST", kJobs, NewJob("unrelated", "OnFailure")).first, 201);
  json elsewhere = NewJob("driver-gpu-a", "Never");
  elsewhere["metadata"]["namespace"] = "ml";
  server_->AddObject(elsewhere);
  auto [listed, list] = Call("GET", std::string(kJobs) + "?labelSelector=app%3Dupgrade");
  ASSERT_EQ(listed, 200);
  EXPECT_EQ(list["kind"], "JobList");
  ASSERT_EQ(list["items"].size(), 2u);  // only this namespace's
  EXPECT_EQ(list["items"][0]["metadata"]["namespace"], "gpunode-system");
  EXPECT_EQ(list["items"][1]["metadata"]["namespace"], "gpunode-system");
  EXPECT_EQ(Call("GET", std::string(kJobs) + "?labelSelector=app%3Dother").second["items"].size(),
            0u);

  json done = {{"succeeded", 1}, {"conditions", {{{"type", "Complete"}, {"status", "True"}}}}};
  server_->SetJobStatus("gpunode-system", "driver-gpu-a", done);
  auto [got, read] = Call("GET", std::string(kJobs) + "/driver-gpu-a");
  ASSERT_EQ(got, 200);
  EXPECT_EQ(read["status"], done);
  EXPECT_NE(read["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);
  EXPECT_EQ(server_->Job("gpunode-system", "driver-gpu-a")->at("status"), done);
  auto [missing, not_found] = Call("GET", std::string(kJobs) + "/driver-gpu-b");
  EXPECT_EQ(missing, 404);
  EXPECT_EQ(not_found["message"], "jobs.batch \"driver-gpu-b\" not found");
}

TEST_F(ApiServerDoubleTest, JobCreateRefusesARestartPolicyAJobCannotHave) {
  for (const std::string policy : {"Always", ""}) {
    auto [code, status] = Call("POST", kJobs, NewJob("driver-gpu-a", policy));
    EXPECT_EQ(code, 422) << policy;
    EXPECT_EQ(status["reason"], "Invalid");
    EXPECT_EQ(status["message"],
              "Job.batch \"driver-gpu-a\" is invalid: spec.template.spec.restartPolicy: Required "
              "value: valid values: \"OnFailure\", \"Never\"");
    EXPECT_EQ(status["details"]["causes"][0]["field"], "spec.template.spec.restartPolicy");
  }
  auto [code, status] = Call("POST", kJobs, NewJob("driver-gpu-a", "Sometimes"));
  EXPECT_EQ(code, 422);
  EXPECT_NE(status["message"].get<std::string>().find("Unsupported value: \"Sometimes\""),
            std::string::npos);
  json no_containers = NewJob("driver-gpu-a", "Never");
  no_containers["spec"]["template"]["spec"]["containers"] = json::array();
  EXPECT_EQ(Call("POST", kJobs, no_containers).first, 422);
  EXPECT_FALSE(server_->Job("gpunode-system", "driver-gpu-a").has_value());
}

TEST_F(ApiServerDoubleTest, JobDeleteInTheBackgroundTakesItsPods) {
  std::string uid = Call("POST", kJobs, NewJob("driver-gpu-a", "Never")).second["metadata"]["uid"];
  auto pod = [](const std::string& name, const std::string& owner_uid) {
    json p = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "gpunode-system"}}}};
    if (!owner_uid.empty()) {
      p["metadata"]["ownerReferences"] = {
          {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", "x"}, {"uid", owner_uid}}};
    }
    return p;
  };
  server_->AddObject(pod("driver-gpu-a-x7k2p", uid));
  server_->AddObject(pod("bystander", ""));

  auto [code, status] =
      Call("DELETE", std::string(kJobs) + "/driver-gpu-a?propagationPolicy=Background");
  EXPECT_EQ(code, 200);
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["status"], "Success");
  EXPECT_EQ(status["details"],
            (json{{"name", "driver-gpu-a"}, {"group", "batch"}, {"kind", "jobs"}, {"uid", uid}}));
  EXPECT_FALSE(server_->Job("gpunode-system", "driver-gpu-a").has_value());
  EXPECT_FALSE(server_->Pod("gpunode-system", "driver-gpu-a-x7k2p").has_value());
  EXPECT_TRUE(server_->Pod("gpunode-system", "bystander").has_value());

  auto [missing, not_found] =
      Call("DELETE", std::string(kJobs) + "/driver-gpu-a?propagationPolicy=Background");
  EXPECT_EQ(missing, 404);
  EXPECT_EQ(not_found["reason"], "NotFound");

  // Without a policy a batch/v1 Job's pods are orphaned.
  uid = Call("POST", kJobs, NewJob("driver-gpu-b", "Never")).second["metadata"]["uid"];
  server_->AddObject(pod("driver-gpu-b-q9z4m", uid));
  EXPECT_EQ(Call("DELETE", std::string(kJobs) + "/driver-gpu-b").first, 200);
  EXPECT_TRUE(server_->Pod("gpunode-system", "driver-gpu-b-q9z4m").has_value());
}

}  // namespace
}  // namespace gpunode::kube
