// Holds the API server double (tests/harness/apiserver_double) to the real kube-apiserver: the
// same objects in both, the same requests sent to both, and the answers compared where gpunode
// reads them (status code, the Status body's kind, reason and code, and the fields named per
// request). A difference fails the test, so the double cannot drift from the release the other
// real-cluster suites run. The double stays for what the real one cannot do (injected 5xx and
// 429 bursts, expired continue tokens and watches); tests/harness/README.md lists them.
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "apiserver_double.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "local_cluster.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"

namespace gpunode {
namespace {

using json = nlohmann::json;

struct Answer {
  int status = 0;
  json body;  // null when the body is not JSON (a watch stream: its first line is parsed)
};

// One HTTP request through curl, to the real apiserver (client certificate of the cluster's
// admin) or to the double (plain HTTP, no credentials).
class Server {
 public:
  virtual ~Server() = default;
  Answer Send(const std::string& method, const std::string& path, const std::string& body = "",
              const std::string& content_type = "application/json") const {
    std::vector<std::string> argv = {
        "/usr/bin/curl", "-sS", "-X", method, "--max-time", "5", "-o", "-", "-w", "\n%{http_code}"};
    std::vector<std::string> auth = Credentials();
    argv.insert(argv.end(), auth.begin(), auth.end());
    if (!body.empty()) {
      argv.insert(argv.end(), {"-H", "Content-Type: " + content_type, "--data-binary", body});
    }
    argv.push_back(Base() + path);
    testing::ProcessResult r = testing::RunProcess(argv);
    Answer answer;
    size_t cut = r.out.rfind('\n');
    if (cut == std::string::npos) return answer;
    answer.status = std::atoi(r.out.c_str() + cut + 1);
    std::string text = r.out.substr(0, cut);
    answer.body = json::parse(text, nullptr, false);
    if (answer.body.is_discarded()) {
      answer.body = json::parse(text.substr(0, text.find('\n')), nullptr, false);
      if (answer.body.is_discarded()) answer.body = json();
    }
    return answer;
  }

 protected:
  virtual std::string Base() const = 0;
  virtual std::vector<std::string> Credentials() const = 0;
};

class RealServer : public Server {
 public:
  explicit RealServer(const testing::LocalCluster& cluster) : cluster_(cluster) {}

 protected:
  std::string Base() const override { return cluster_.server(); }
  std::vector<std::string> Credentials() const override {
    std::string pki = cluster_.dir() + "/pki/";
    return {"--cacert", pki + "ca.crt", "--cert", pki + "admin.crt", "--key", pki + "admin.key"};
  }

 private:
  const testing::LocalCluster& cluster_;
};

class DoubleServer : public Server {
 public:
  explicit DoubleServer(const testing::ApiServerDouble& server) : server_(server) {}

 protected:
  std::string Base() const override { return server_.url(); }
  std::vector<std::string> Credentials() const override { return {}; }

 private:
  const testing::ApiServerDouble& server_;
};

// The objects both servers hold: a node, a pod bound to it (running, as its status says), and a
// budget over that pod that allows no disruption.
const json kNode = {{"apiVersion", "v1"},
                    {"kind", "Node"},
                    {"metadata", {{"name", "conf-node"}, {"labels", {{"pool", "training"}}}}}};
const json kPod = {
    {"apiVersion", "v1"},
    {"kind", "Pod"},
    {"metadata", {{"name", "conf-pod"}, {"namespace", "default"}, {"labels", {{"app", "conf"}}}}},
    {"spec",
     {{"nodeName", "conf-node"},
      {"containers", {{{"name", "main"}, {"image", testing::LocalCluster::kLocalImage}}}}}}};
// Bound to the node but never started: the Eviction API lets it go whatever the budget says.
json PendingPod() {
  json pod = kPod;
  pod["metadata"]["name"] = "conf-pending";
  return pod;
}
const json kBudget = {
    {"apiVersion", "policy/v1"},
    {"kind", "PodDisruptionBudget"},
    {"metadata", {{"name", "conf-pdb"}, {"namespace", "default"}}},
    {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "conf"}}}}}}}};

const std::string kLease = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",)"
                           R"("metadata":{"name":"conf-lease","namespace":"default"},)"
                           R"("spec":{"holderIdentity":"copy-a","leaseDurationSeconds":15}})";
const std::string kEviction = R"({"apiVersion":"policy/v1","kind":"Eviction",)"
                              R"("metadata":{"name":"conf-pod","namespace":"default"}})";

struct Exchange {
  std::string name;
  std::function<Answer(const Server&)> send;
  // The fields gpunode reads from this answer, as JSON pointers into the body.
  std::vector<std::string> fields;
};

std::vector<Exchange> Exchanges() {
  return {
      {"get a missing node",
       [](const Server& s) { return s.Send("GET", "/api/v1/nodes/absent"); },
       {"/kind", "/reason", "/code"}},
      {"get the node",
       [](const Server& s) { return s.Send("GET", "/api/v1/nodes/conf-node"); },
       {"/kind", "/apiVersion", "/metadata/name", "/metadata/labels/pool"}},
      {"list pods on the node",
       [](const Server& s) {
         return s.Send("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dconf-node&limit=10");
       },
       {"/kind", "/apiVersion", "/items/0/metadata/name", "/items/0/spec/nodeName"}},
      {"list pods by label",
       [](const Server& s) {
         return s.Send("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dnone");
       },
       {"/kind", "/items"}},
      {"merge-patch the node's labels",
       [](const Server& s) {
         return s.Send("PATCH", "/api/v1/nodes/conf-node",
                       R"({"metadata":{"labels":{"nvidia.com/gpu.state":"draining"}}})",
                       "application/merge-patch+json");
       },
       {"/kind", "/metadata/labels/nvidia.com~1gpu.state", "/metadata/labels/pool"}},
      {"merge-patch removing a label",
       [](const Server& s) {
         return s.Send("PATCH", "/api/v1/nodes/conf-node",
                       R"({"metadata":{"labels":{"nvidia.com/gpu.state":null}}})",
                       "application/merge-patch+json");
       },
       {"/kind", "/metadata/labels/nvidia.com~1gpu.state", "/metadata/labels/pool"}},
      {"strategic-merge-patch the cordon",
       [](const Server& s) {
         return s.Send("PATCH", "/api/v1/nodes/conf-node", R"({"spec":{"unschedulable":true}})",
                       "application/strategic-merge-patch+json");
       },
       {"/kind", "/spec/unschedulable"}},
      {"patch with a media type that is no patch",
       [](const Server& s) {
         return s.Send("PATCH", "/api/v1/nodes/conf-node", R"({"spec":{}})", "application/json");
       },
       {"/kind", "/reason", "/code"}},
      {"evict the budgeted pod",
       [](const Server& s) {
         return s.Send("POST", "/api/v1/namespaces/default/pods/conf-pod/eviction", kEviction);
       },
       {"/kind", "/reason", "/code", "/details/causes/0/reason", "/details/causes/0/message"}},
      {"evict the pod that never started",
       [](const Server& s) {
         std::string body = kEviction;
         body.replace(body.find("conf-pod"), 8, "conf-pending");
         return s.Send("POST", "/api/v1/namespaces/default/pods/conf-pending/eviction", body);
       },
       {"/kind", "/status"}},
      {"evict a missing pod",
       [](const Server& s) {
         std::string body = kEviction;
         body.replace(body.find("conf-pod"), 8, "gone-pod");
         return s.Send("POST", "/api/v1/namespaces/default/pods/gone-pod/eviction", body);
       },
       {"/kind", "/reason", "/code"}},
      {"create the lease",
       [](const Server& s) {
         return s.Send("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", kLease);
       },
       {"/kind", "/spec/holderIdentity", "/spec/leaseDurationSeconds"}},
      {"create the lease again",
       [](const Server& s) {
         return s.Send("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", kLease);
       },
       {"/kind", "/reason", "/code"}},
      {"replace the lease with a stale resourceVersion",
       [](const Server& s) {
         json lease = json::parse(kLease);
         lease["metadata"]["resourceVersion"] = "1";
         lease["spec"]["holderIdentity"] = "copy-b";
         return s.Send("PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/conf-lease",
                       lease.dump());
       },
       {"/kind", "/reason", "/code"}},
      {"replace the lease as read",
       [](const Server& s) {
         Answer read =
             s.Send("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/conf-lease");
         json lease = read.body;
         lease["spec"]["holderIdentity"] = "copy-b";
         return s.Send("PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/conf-lease",
                       lease.dump());
       },
       {"/kind", "/spec/holderIdentity"}},
      {"watch the node",
       [](const Server& s) {
         return s.Send("GET",
                       "/api/v1/nodes?fieldSelector=metadata.name%3Dconf-node&watch=true&"
                       "timeoutSeconds=1");
       },
       {"/type", "/object/kind", "/object/metadata/name"}},
  };
}

std::string Field(const json& body, const std::string& pointer) {
  if (body.is_null()) return "(no JSON body)";
  json::json_pointer at(pointer);
  if (!body.contains(at)) return "(absent)";
  return body.at(at).dump();
}

TEST(ApiServerDoubleConformance, AnswersAsTheRealApiServerDoes) {
  testing::LocalCluster cluster;
  if (!cluster.missing().empty()) GTEST_SKIP() << cluster.missing();
  ASSERT_TRUE(cluster.running()) << cluster.error();
  for (const json& object : {kNode, kPod, PendingPod(), kBudget}) {
    testing::ProcessResult r = cluster.Kubectl({"create", "-f", "-"}, object.dump());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // No kubelet runs the pod: its status is written as a kubelet would for a running pod, so that
  // the budget protects it.
  json running = {
      {"status",
       {{"phase", "Running"}, {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  testing::ProcessResult patched = cluster.Kubectl(
      {"patch", "pod", "conf-pod", "--subresource=status", "--type=merge", "-p", running.dump()});
  ASSERT_EQ(patched.exit_code, 0) << patched.err;
  // The disruption controller has judged the budget: one healthy pod, no disruption allowed.
  bool judged = false;
  for (int i = 0; i < 300 && !judged; ++i) {
    testing::ProcessResult r =
        cluster.Kubectl({"get", "pdb", "conf-pdb", "-o", "jsonpath={.status.currentHealthy}"});
    judged = r.out == "1";
    if (!judged) usleep(100 * 1000);
  }
  ASSERT_TRUE(judged) << "the disruption controller never counted the budget";

  // The double holds the objects as the real apiserver returns them: defaulted, and the
  // budget with the status the disruption controller wrote.
  testing::ApiServerDouble fake({.token = ""});
  ASSERT_TRUE(fake.Start());
  for (const std::vector<std::string>& what :
       std::vector<std::vector<std::string>>{{"node", "conf-node"},
                                             {"pod", "conf-pod"},
                                             {"pod", "conf-pending"},
                                             {"pdb", "conf-pdb"}}) {
    std::vector<std::string> args = {"get"};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"-o", "json"});
    testing::ProcessResult r = cluster.Kubectl(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    fake.AddObject(json::parse(r.out));
  }

  RealServer real_server(cluster);
  DoubleServer double_server(fake);
  for (const Exchange& exchange : Exchanges()) {
    SCOPED_TRACE(exchange.name);
    Answer real = exchange.send(real_server);
    Answer ours = exchange.send(double_server);
    ASSERT_GT(real.status, 0) << "no answer from the real apiserver";
    EXPECT_EQ(ours.status, real.status)
        << "real: " << real.body.dump() << "\ndouble: " << ours.body.dump();
    for (const std::string& field : exchange.fields) {
      EXPECT_EQ(Field(ours.body, field), Field(real.body, field))
          << field << "\nreal: " << real.body.dump() << "\ndouble: " << ours.body.dump();
    }
  }
}

}  // namespace
}  // namespace gpunode
