// A small Kubernetes API client: one HTTP transport (libcurl, or for the node daemons the small
// HTTP/1.1 transport of http1_transport.h; replaceable in tests),
// retries with backoff that honour Retry-After, paginated lists, and API Status errors turned
// into one-line messages.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/env.h"
#include "kube/kubeconfig.h"
#include "simdjson.h"

namespace gpunode::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // absolute path with query, e.g. /api/v1/nodes?limit=500
  std::string content_type;
  std::string body;
  // A watch: the body of a 2xx answer goes to `on_body` as it arrives, not into the response, and
  // the request has no overall timeout (the server ends a watch after its timeoutSeconds).
  // `on_body` returning false ends the transfer, as does `keep_going` returning false; it is asked
  // about once a second while nothing arrives. Either way the transfer ends without an error. The
  // body of an answer that is not 2xx is collected into the response as usual.
  std::function<bool(std::string_view)> on_body = nullptr;
  std::function<bool()> keep_going = nullptr;
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, if any
};

// Sends one request. A transport failure (DNS, connect, TLS, timeout) is an error Status; any
// HTTP status, 500 included, is a response.
//
// Thread-safety: none. A transport keeps one connection and caches credentials (the token file it
// rereads, an exec plugin's answer until it expires), and Send mutates both: one thread per
// transport, or one transport per thread.
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual absl::StatusOr<HttpResponse> Send(const HttpRequest& request) = 0;
};

struct TransportOptions {
  absl::Duration request_timeout = absl::Seconds(30);
  absl::Duration connect_timeout = absl::Seconds(10);
};

// libcurl over TLS with the credentials in `access`. Tokens and keys go to curl only.
absl::StatusOr<std::unique_ptr<HttpTransport>> NewCurlTransport(const ClusterAccess& access,
                                                                const TransportOptions& options);

struct RetryPolicy {
  int max_attempts = 6;
  absl::Duration initial_backoff = absl::Milliseconds(250);
  absl::Duration max_backoff = absl::Seconds(10);
  absl::Duration max_retry_after = absl::Seconds(60);  // a Retry-After above this is capped
};

struct ListOptions {
  std::string field_selector;  // e.g. spec.nodeName=gpu-a
  std::string label_selector;
  int limit = 500;
};

// Percent-encodes a query value.
std::string UrlEncode(std::string_view value);

// One line for a non-2xx answer: method, path, code and the API server's Status message. A 403
// ends with what grants the access: the cluster commands' deploy/cluster/rbac.yaml, or
// `forbidden_hint`.
absl::Status StatusFromResponse(const HttpRequest& request, const HttpResponse& response);
absl::Status StatusFromResponse(const HttpRequest& request, const HttpResponse& response,
                                std::string_view forbidden_hint);

// Thread-safety: as its transport's, which is none for the curl transport: a Client belongs to
// one thread at a time.
class Client {
 public:
  // The waits between attempts are `env`'s sleeps (simulated in tests); `env` outlives the client.
  Client(std::unique_ptr<HttpTransport> transport, RetryPolicy retry, std::string description,
         core::Env& env);

  // Retries 429, 500, 502, 503, 504 and transport errors with exponential backoff, waiting for
  // Retry-After when the server sends it. Returns the last response, also when a stop requested
  // of the Env ends a wait.
  absl::StatusOr<HttpResponse> Send(const HttpRequest& request);
  // Sends once: for requests whose 429 carries meaning (an eviction blocked by a budget).
  absl::StatusOr<HttpResponse> SendOnce(const HttpRequest& request);

  // GET returning the body of a 2xx answer, padded for simdjson; NotFound for 404.
  absl::StatusOr<std::string> Get(std::string_view path);
  absl::Status Patch(std::string_view path, std::string_view content_type, std::string body);

  // Lists `path` page by page; `page` gets each body (padded) and returns its continue token.
  using PageFn = std::function<absl::StatusOr<std::string>(simdjson::padded_string_view body,
                                                           std::string_view source)>;
  absl::Status List(std::string_view path, const ListOptions& options, const PageFn& page);

  const std::string& description() const { return description_; }
  // The Env the client waits on; its clock stamps what the client's users post (events).
  core::Env& env() const { return env_; }

 private:
  std::unique_ptr<HttpTransport> transport_;
  RetryPolicy retry_;
  std::string description_;
  core::Env& env_;
};

// Builds a client for `access`: curl transport, default retries, waits on `env`.
absl::StatusOr<std::unique_ptr<Client>> NewClient(const ClusterAccess& access,
                                                  const TransportOptions& options, core::Env& env);

// Builds a client for a node daemon (the node label's watch, node events): the small HTTP/1.1
// transport of http1_transport.h where it can serve `access`, which keeps libcurl and the
// libraries it loads out of the process; curl where it cannot (a credential plugin, a proxy), said
// in one log line. Default retries, waits on `env`.
absl::StatusOr<std::unique_ptr<Client>> NewNodeClient(const ClusterAccess& access,
                                                      const TransportOptions& options,
                                                      core::Env& env);

// Makes `body` usable as a simdjson padded view without copying.
simdjson::padded_string_view PadInPlace(std::string& body);

}  // namespace gpunode::kube
