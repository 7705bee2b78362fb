// An in-process Kubernetes API server double that speaks the real wire format for what gpunode
// uses: paginated lists (limit, continue tokens, remainingItemCount) with field and label
// selectors, GET of single objects, node and pod PATCH (merge, strategic merge, JSON patch), the
// policy/v1 Eviction subresource answering 429 with the PodDisruptionBudget Status, batch/v1
// CronJobs, core/v1 Events and Namespaces, apps/v1 DaemonSets (create 201 / 409 when it exists,
// get, list, replace with resourceVersion checks, delete 404 when missing), batch/v1 Jobs (listed
// cluster-wide and per namespace; create 201 / 409 / 422 for a restartPolicy other than Never or
// OnFailure, get, delete with a propagationPolicy), coordination.k8s.io/v1 Leases (create, get,
// replace with resourceVersion checks, delete), pod create, delete and log, bearer-token
// authentication, injected 429/5xx answers with Retry-After, and node watches (?watch=true,
// newline-delimited events) that follow AddObject and node PATCH.
// Nothing runs a created pod or Job: tests play the scheduler, kubelet and Job controller with
// SetPodPhase, SetPodLog and SetJobStatus.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace gpunode::testing {

class ApiServerDouble {
 public:
  struct Options {
    std::string token = "double-token";  // empty: no authentication
    // Serve HTTPS with this certificate and key when set; plain HTTP otherwise.
    std::string tls_cert = {};
    std::string tls_key = {};
    // Refuse TLS 1.2, as an API server started with --tls-min-version=VersionTLS13 does.
    bool tls13_only = false;
  };

  struct Request {
    std::string method;
    std::string path;
    std::map<std::string, std::string> query;
    std::string content_type;
    std::string body;
  };

  explicit ApiServerDouble(Options options);
  ~ApiServerDouble();
  ApiServerDouble(const ApiServerDouble&) = delete;
  ApiServerDouble& operator=(const ApiServerDouble&) = delete;

  // Binds 127.0.0.1 on a free port and serves on a background thread. Connections made after
  // this returns are accepted (the socket listens before the thread starts).
  bool Start();
  void Stop();
  int port() const { return port_; }
  std::string url() const;
  // A kubeconfig whose one context points at this double with no credentials: for a double
  // started with an empty token over plain HTTP, as the binary reads it from KUBECONFIG.
  std::string PlainKubeconfig() const;

  // Objects, as the API server would return them (kind and apiVersion are filled in).
  // Node, Pod, PodDisruptionBudget, Job, CronJob, Event, Namespace, DaemonSet or Lease.
  void AddObject(nlohmann::json object);
  // Loads every object of those kinds in a `kubectl get -o json` List file.
  bool LoadList(const std::string& path);
  std::optional<nlohmann::json> Node(const std::string& name) const;
  std::optional<nlohmann::json> Pod(const std::string& ns, const std::string& name) const;
  void SetPodPhase(const std::string& ns, const std::string& name, const std::string& phase);
  void DeletePod(const std::string& ns, const std::string& name);
  // What GET .../pods/NAME/log answers (the container's output).
  void SetPodLog(const std::string& ns, const std::string& name, const std::string& log);
  void SetDisruptionsAllowed(const std::string& ns, const std::string& name, int allowed);
  std::optional<nlohmann::json> DaemonSet(const std::string& ns, const std::string& name) const;
  // What the DaemonSet controller would write: desired, ready and updated pod counts for the
  // current generation.
  void SetDaemonSetStatus(const std::string& ns, const std::string& name, int desired, int ready,
                          int updated);
  std::optional<nlohmann::json> Job(const std::string& ns, const std::string& name) const;
  // What the Job controller would write, e.g. {"succeeded": 1, "conditions": [{"type":
  // "Complete", "status": "True"}]}; replaces the status and bumps the resourceVersion.
  void SetJobStatus(const std::string& ns, const std::string& name, nlohmann::json status);
  std::optional<nlohmann::json> Lease(const std::string& ns, const std::string& name) const;

  // The next `count` requests with this method whose path starts with `path_prefix` get
  // `status` (a Status body), with a Retry-After header when retry_after_seconds >= 0.
  void FailNext(const std::string& method, const std::string& path_prefix, int status, int count,
                int retry_after_seconds = -1);
  // Answers requests carrying a continue token with 410 Expired.
  void ExpireContinueTokens(bool expire);
  // Ends every node watch at once with the ERROR event (410 Expired) the API server sends for a
  // resourceVersion it no longer holds.
  void ExpireWatches(bool expire);
  // Runs before each authenticated request is served, under no lock: tests use it to change
  // state as a client polls (a pod finishing after a few lists).
  void OnRequest(std::function<void(const Request&)> hook);

  std::vector<Request> Requests() const;
  int CountRequests(const std::string& method, const std::string& path_prefix) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = -1;
};

}  // namespace gpunode::testing
