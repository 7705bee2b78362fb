#include "kube/client.h"

#include <curl/curl.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "core/io_deadline.h"
#include "core/loaded_library.h"
#include "core/log.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "kube/bearer_token.h"
#include "kube/exec_credential.h"
#include "kube/http1_transport.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace gpunode::kube {

using core::StrAppend;
using core::StrCat;
using core::TrimSpace;

namespace {

// libcurl, loaded when a transport is made. Every role is in one binary; linking libcurl would
// map it and its dependencies (GnuTLS, Kerberos, LDAP, libssh2, librtmp: about 3.5 MiB resident)
// into every process, including the node daemons, which never call the API server.
struct CurlApi {
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_reset) easy_reset;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_perform) easy_perform;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
  // The entry points above are libcurl's for as long as this holds it.
  core::LoadedLibrary library;
};

// Each transport holds a reference of its own; the dynamic linker maps libcurl once and counts
// them.
absl::StatusOr<CurlApi> LoadCurl() {
  // RTLD_NODELETE: the last transport's dlclose leaves libcurl mapped, as a linked library stays.
  // curl_easy_init sets up libcurl's globals and its TLS library on first use, and only
  // curl_global_cleanup undoes that, which must not run while another thread may be making a
  // transport; unloading without it would leak that state on every unload and load.
  absl::StatusOr<core::LoadedLibrary> library =
      core::LoadedLibrary::Open("libcurl.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!library.ok()) {
    return absl::FailedPreconditionError(
        StrCat("cannot load libcurl.so.4 (", library.status().message(), "); install libcurl4"));
  }
  CurlApi loaded{};
  loaded.library = *std::move(library);
  bool missing = false;
  auto resolve = [&](auto& entry, const char* name) {
    entry = loaded.library.Symbol<std::remove_reference_t<decltype(entry)>>(name);
    missing = missing || entry == nullptr;
  };
  resolve(loaded.easy_init, "curl_easy_init");
  resolve(loaded.easy_cleanup, "curl_easy_cleanup");
  resolve(loaded.easy_reset, "curl_easy_reset");
  resolve(loaded.easy_setopt, "curl_easy_setopt");
  resolve(loaded.easy_perform, "curl_easy_perform");
  resolve(loaded.easy_getinfo, "curl_easy_getinfo");
  resolve(loaded.easy_strerror, "curl_easy_strerror");
  resolve(loaded.slist_append, "curl_slist_append");
  resolve(loaded.slist_free_all, "curl_slist_free_all");
  if (missing) return absl::FailedPreconditionError("libcurl.so.4 lacks a curl_easy_* function");
  return loaded;
}

struct CurlSlist {
  const CurlApi& curl;
  curl_slist* list = nullptr;
  ~CurlSlist() { curl.slist_free_all(list); }
  void Add(const std::string& line) { list = curl.slist_append(list, line.c_str()); }
};

size_t WriteBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// Where a watch's body goes: to the caller while the answer is 2xx, else into the response.
struct StreamSink {
  const CurlApi* api;
  CURL* curl;
  const HttpRequest* request;
  std::string* error_body;
  bool ended_by_caller = false;
};

size_t StreamBody(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<StreamSink*>(user);
  long status = 0;
  sink->api->easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status > 299) {
    sink->error_body->append(data, size * n);
    return size * n;
  }
  if (!sink->request->on_body(std::string_view(data, size * n))) {
    sink->ended_by_caller = true;
    return 0;  // curl ends the transfer with CURLE_WRITE_ERROR
  }
  return size * n;
}

int StreamProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* sink = static_cast<StreamSink*>(user);
  if (sink->request->keep_going && !sink->request->keep_going()) {
    sink->ended_by_caller = true;
    return 1;  // curl ends the transfer with CURLE_ABORTED_BY_CALLBACK
  }
  return 0;
}

size_t WriteHeader(char* data, size_t size, size_t n, void* user) {
  std::string_view line(data, size * n);
  if (line.size() > 12 &&
      absl::EqualsIgnoreCase(absl::string_view(line.data(), 12), "retry-after:")) {
    *static_cast<std::string*>(user) =
        std::string(TrimSpace(line.substr(sizeof("retry-after:") - 1)));
  }
  return size * n;
}

// Splits https://host:port into host and port for CURLOPT_CONNECT_TO.
bool SplitServer(std::string_view server, std::string& scheme, std::string& host,
                 std::string& port) {
  size_t colon_slash = server.find("://");
  if (colon_slash == std::string_view::npos) return false;
  scheme = std::string(server.substr(0, colon_slash));
  std::string_view rest = server.substr(colon_slash + 3);
  rest = rest.substr(0, rest.find('/'));
  size_t port_colon = rest.rfind(':');
  if (port_colon != std::string_view::npos &&
      rest.find(']', port_colon) == std::string_view::npos) {
    host = std::string(rest.substr(0, port_colon));
    port = std::string(rest.substr(port_colon + 1));
  } else {
    host = std::string(rest);
    port = scheme == "https" ? "443" : "80";
  }
  return true;
}

class CurlTransport : public HttpTransport {
 public:
  CurlTransport(CurlApi api, ClusterAccess access, TransportOptions options, CURL* curl)
      : api_(std::move(api)),
        access_(std::move(access)),
        options_(options),
        curl_(curl),
        token_(access_.token, access_.token_file) {}
  ~CurlTransport() override { api_.easy_cleanup(curl_); }

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override;

 private:
  absl::StatusOr<HttpResponse> SendOnce(const HttpRequest& request);
  // The credential plugin's last answer, run again when it has expired.
  absl::StatusOr<const ExecCredential*> PluginCredential();

  const CurlApi api_;
  ClusterAccess access_;
  TransportOptions options_;
  CURL* curl_;  // reused, so keep-alive connections and TLS sessions are reused too
  BearerToken token_;
  std::optional<ExecCredential> plugin_credential_;
};

absl::StatusOr<const ExecCredential*> CurlTransport::PluginCredential() {
  // client-go refreshes a little before expiry, so a request never goes out with a token that
  // lapses in flight.
  if (plugin_credential_ && plugin_credential_->expires &&
      core::IoDeadline::At(*plugin_credential_->expires - absl::Seconds(10)).Passed()) {
    plugin_credential_.reset();
  }
  if (!plugin_credential_) {
    ASSIGN_OR_RETURN(ExecCredential fresh,
                     RunExecPlugin(*access_.exec, access_, options_.request_timeout));
    plugin_credential_ = std::move(fresh);
  }
  return &*plugin_credential_;
}

absl::StatusOr<HttpResponse> CurlTransport::Send(const HttpRequest& request) {
  bool had_credential = plugin_credential_.has_value();
  ASSIGN_OR_RETURN(HttpResponse response, SendOnce(request));
  // The API server refused the plugin's credential before it said it would expire (revoked,
  // clock skew): ask the plugin again once, as client-go does.
  if (response.status == 401 && access_.exec && had_credential) {
    plugin_credential_.reset();
    return SendOnce(request);
  }
  return response;
}

absl::StatusOr<HttpResponse> CurlTransport::SendOnce(const HttpRequest& request) {
  const ExecCredential* plugin = nullptr;
  if (access_.exec) {
    ASSIGN_OR_RETURN(plugin, PluginCredential());
  }
  CURL* c = curl_;
  api_.easy_reset(c);
  std::string url = StrCat(access_.server, request.path);
  std::string connect_to;
  curl_slist* connect_to_list = nullptr;
  if (!access_.tls_server_name.empty()) {
    // Verify the certificate (and send SNI) for tls-server-name while connecting to the server's
    // real address: curl has no separate SNI option, but CONNECT_TO gives the same effect.
    std::string scheme, host, port;
    if (SplitServer(access_.server, scheme, host, port)) {
      url = StrCat(scheme, "://", access_.tls_server_name, ":", port, request.path);
      connect_to = StrCat(access_.tls_server_name, ":", port, ":", host, ":", port);
      connect_to_list = api_.slist_append(nullptr, connect_to.c_str());
    }
  }
  CurlSlist connect_to_holder{api_, connect_to_list};
  api_.easy_setopt(c, CURLOPT_URL, url.c_str());
  if (connect_to_list) api_.easy_setopt(c, CURLOPT_CONNECT_TO, connect_to_list);
  api_.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  bool streaming = static_cast<bool>(request.on_body);
  api_.easy_setopt(
      c, CURLOPT_TIMEOUT_MS,
      streaming ? 0L : static_cast<long>(absl::ToInt64Milliseconds(options_.request_timeout)));
  api_.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options_.connect_timeout)));
  // gzip: big lists shrink a lot. Only gzip, as client-go asks: it is the one encoding the API
  // server speaks, and a server that offers more (brotli) would spend far more CPU than the
  // bytes are worth. Not for a watch, whose events must not wait in a compressor.
  if (!streaming) api_.easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "gzip");
  api_.easy_setopt(c, CURLOPT_USERAGENT, "gpunode/0.1");
  api_.easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method == "HEAD") api_.easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (!request.body.empty() || request.method == "POST" || request.method == "PATCH" ||
      request.method == "PUT") {
    api_.easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
    api_.easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
  }
  if (access_.insecure_skip_tls_verify) {
    api_.easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    api_.easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!access_.ca_pem.empty()) {
    curl_blob ca{access_.ca_pem.data(), access_.ca_pem.size(), CURL_BLOB_NOCOPY};
    api_.easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
  }
  const std::string& cert_pem = plugin ? plugin->client_cert_pem : access_.client_cert_pem;
  const std::string& key_pem = plugin ? plugin->client_key_pem : access_.client_key_pem;
  if (!cert_pem.empty()) {
    curl_blob cert{const_cast<char*>(cert_pem.data()), cert_pem.size(), CURL_BLOB_NOCOPY};
    curl_blob key{const_cast<char*>(key_pem.data()), key_pem.size(), CURL_BLOB_NOCOPY};
    api_.easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
    api_.easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    api_.easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
    api_.easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
  }
  CurlSlist headers{api_};
  headers.Add("Accept: application/json");
  if (!request.content_type.empty()) headers.Add("Content-Type: " + request.content_type);
  std::string token;
  if (plugin) {
    token = plugin->token;
  } else {
    ASSIGN_OR_RETURN(token, token_.Get());
  }
  if (!token.empty()) {
    headers.Add("Authorization: Bearer " + token);
  } else if (!access_.username.empty()) {
    api_.easy_setopt(c, CURLOPT_USERNAME, access_.username.c_str());
    api_.easy_setopt(c, CURLOPT_PASSWORD, access_.password.c_str());
  }
  api_.easy_setopt(c, CURLOPT_HTTPHEADER, headers.list);
  HttpResponse response;
  StreamSink sink{&api_, c, &request, &response.body};
  if (streaming) {
    api_.easy_setopt(c, CURLOPT_WRITEFUNCTION, StreamBody);
    api_.easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    api_.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, StreamProgress);
    api_.easy_setopt(c, CURLOPT_XFERINFODATA, &sink);
    api_.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  } else {
    api_.easy_setopt(c, CURLOPT_WRITEFUNCTION, WriteBody);
    api_.easy_setopt(c, CURLOPT_WRITEDATA, &response.body);
  }
  api_.easy_setopt(c, CURLOPT_HEADERFUNCTION, WriteHeader);
  api_.easy_setopt(c, CURLOPT_HEADERDATA, &response.retry_after);
  char error_buffer[CURL_ERROR_SIZE] = {0};
  api_.easy_setopt(c, CURLOPT_ERRORBUFFER, error_buffer);
  CURLcode rc = api_.easy_perform(c);
  // The blobs and headers above point at locals and members; drop them from the handle.
  api_.easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
  api_.easy_setopt(c, CURLOPT_CONNECT_TO, nullptr);
  if (rc != CURLE_OK && !sink.ended_by_caller) {
    std::string detail = error_buffer[0] ? error_buffer : api_.easy_strerror(rc);
    std::string hint;
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
      hint = StrCat("; the server's certificate is not trusted by the CA of ", access_.description);
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
      hint = "; raise --request-timeout if the cluster is large";
    }
    absl::StatusCode code = rc == CURLE_OPERATION_TIMEDOUT ? absl::StatusCode::kDeadlineExceeded
                                                           : absl::StatusCode::kUnavailable;
    return absl::Status(
        code, StrCat(request.method, " ", access_.server, request.path, ": ", detail, hint));
  }
  long status = 0;
  api_.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  response.status = static_cast<int>(status);
  return response;
}

bool Retryable(int status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpTransport>> NewCurlTransport(const ClusterAccess& access,
                                                                const TransportOptions& options) {
  ASSIGN_OR_RETURN(CurlApi api, LoadCurl());
  CURL* curl = api.easy_init();
  if (curl == nullptr) return absl::InternalError("cannot initialise libcurl");
  return std::unique_ptr<HttpTransport>(new CurlTransport(std::move(api), access, options, curl));
}

std::string UrlEncode(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : value) {
    if (absl::ascii_isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out.push_back(static_cast<char>(ch));
    } else {
      out.push_back('%');
      out.push_back(kHex[ch >> 4]);
      out.push_back(kHex[ch & 15]);
    }
  }
  return out;
}

absl::Status StatusFromResponse(const HttpRequest& request, const HttpResponse& response) {
  return StatusFromResponse(request, response, "grant the permissions in deploy/cluster/rbac.yaml");
}

absl::Status StatusFromResponse(const HttpRequest& request, const HttpResponse& response,
                                std::string_view forbidden_hint) {
  std::string message;
  std::string reason;
  nlohmann::json j = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    if (auto it = j.find("message"); it != j.end() && it->is_string()) message = *it;
    if (auto it = j.find("reason"); it != j.end() && it->is_string()) reason = *it;
  }
  if (message.empty()) {
    message = response.body.substr(0, 200);
    if (message.empty()) message = "no message";
  }
  std::string text = StrCat(request.method, " ", request.path, ": ", response.status, " ",
                            reason.empty() ? "" : StrCat(reason, ": "), message);
  switch (response.status) {
    case 401:
      return absl::UnauthenticatedError(
          StrCat(text, "; the credentials were rejected: check the token or certificate"));
    case 403:
      return absl::PermissionDeniedError(StrCat(text, "; ", forbidden_hint));
    case 404:
      return absl::NotFoundError(text);
    case 409:
      return absl::AbortedError(text);
    case 410:
      return absl::AbortedError(
          StrCat(text, "; the list changed too much while paging, run the command again"));
    case 429:
      return absl::ResourceExhaustedError(text);
    default:
      // Any other 4xx (400, 422, ...) refuses the request itself: gpunode sent something the
      // server would not take, or the object changed under it. The user typed nothing wrong, so
      // it is a failure (exit 1), not an input error; a caller whose request carries the user's
      // own input (a file they named) marks it as such.
      return response.status >= 500 ? absl::UnavailableError(text)
                                    : absl::FailedPreconditionError(
                                          StrCat(text, "; the API server refused the request"));
  }
}

simdjson::padded_string_view PadInPlace(std::string& body) {
  body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  return simdjson::padded_string_view(body.data(), body.size(), body.capacity());
}

Client::Client(std::unique_ptr<HttpTransport> transport, RetryPolicy retry, std::string description,
               core::Env& env)
    : transport_(std::move(transport)),
      retry_(retry),
      description_(std::move(description)),
      env_(env) {}

absl::StatusOr<HttpResponse> Client::SendOnce(const HttpRequest& request) {
  absl::Time start = env_.Now();
  absl::StatusOr<HttpResponse> response = transport_->Send(request);
  // Method, path and status only: headers carry the credentials.
  if (response.ok()) {
    spdlog::debug("{} {} -> {} ({} ms)", request.method, request.path, response->status,
                  absl::ToInt64Milliseconds(env_.Now() - start));
  } else {
    spdlog::debug("{} {} -> {}", request.method, request.path, response.status().message());
  }
  return response;
}

absl::StatusOr<HttpResponse> Client::Send(const HttpRequest& request) {
  absl::Duration backoff = retry_.initial_backoff;
  for (int attempt = 1;; ++attempt) {
    absl::StatusOr<HttpResponse> response = SendOnce(request);
    bool transient = response.ok()
                         ? Retryable(response->status)
                         : response.status().code() == absl::StatusCode::kUnavailable ||
                               response.status().code() == absl::StatusCode::kDeadlineExceeded;
    if (!transient || attempt >= retry_.max_attempts) return response;
    absl::Duration wait = backoff;
    int64_t seconds = 0;
    if (response.ok() && !response->retry_after.empty() &&
        absl::SimpleAtoi(response->retry_after, &seconds) && seconds >= 0) {
      wait = std::min(absl::Seconds(seconds), retry_.max_retry_after);
    }
    // The first retry is said at the default level, so that a command that waits on an API
    // server in trouble does not look hung; the rest at info.
    spdlog::log(attempt == 1 ? spdlog::level::warn : spdlog::level::info,
                "{} {}: {}; retrying in {} (attempt {} of {})", request.method, request.path,
                response.ok() ? StrCat("HTTP ", response->status)
                              : std::string(response.status().message()),
                absl::FormatDuration(wait), attempt + 1, retry_.max_attempts);
    if (!env_.SleepFor(wait)) return response;
    backoff = std::min(backoff * 2, retry_.max_backoff);
  }
}

absl::StatusOr<std::string> Client::Get(std::string_view path) {
  HttpRequest request;
  request.path = std::string(path);
  ASSIGN_OR_RETURN(HttpResponse response, Send(request));
  if (response.status < 200 || response.status > 299) {
    return StatusFromResponse(request, response);
  }
  return std::move(response.body);
}

absl::Status Client::Patch(std::string_view path, std::string_view content_type, std::string body) {
  HttpRequest request;
  request.method = "PATCH";
  request.path = std::string(path);
  request.content_type = std::string(content_type);
  request.body = std::move(body);
  ASSIGN_OR_RETURN(HttpResponse response, Send(request));
  if (response.status < 200 || response.status > 299) {
    return StatusFromResponse(request, response);
  }
  return absl::OkStatus();
}

absl::Status Client::List(std::string_view path, const ListOptions& options, const PageFn& page) {
  std::string continue_token;
  int page_number = 0;
  do {
    std::string query = StrCat("?limit=", options.limit);
    if (!options.field_selector.empty()) {
      StrAppend(&query, "&fieldSelector=", UrlEncode(options.field_selector));
    }
    if (!options.label_selector.empty()) {
      StrAppend(&query, "&labelSelector=", UrlEncode(options.label_selector));
    }
    if (!continue_token.empty()) StrAppend(&query, "&continue=", UrlEncode(continue_token));
    HttpRequest request;
    request.path = StrCat(path, query);
    ASSIGN_OR_RETURN(HttpResponse response, Send(request));
    if (response.status < 200 || response.status > 299) {
      return StatusFromResponse(request, response);
    }
    ++page_number;
    std::string source = StrCat("GET ", path, " (page ", page_number, ")");
    ASSIGN_OR_RETURN(continue_token, page(PadInPlace(response.body), source));
  } while (!continue_token.empty());
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Client>> NewClient(const ClusterAccess& access,
                                                  const TransportOptions& options, core::Env& env) {
  ASSIGN_OR_RETURN(std::unique_ptr<HttpTransport> transport, NewCurlTransport(access, options));
  return std::make_unique<Client>(std::move(transport), RetryPolicy{}, access.description, env);
}

absl::StatusOr<std::unique_ptr<Client>> NewNodeClient(const ClusterAccess& access,
                                                      const TransportOptions& options,
                                                      core::Env& env) {
  std::string why;
  if (!Http1CanServe(access, &why)) {
    spdlog::info("{}: {}; the API server is reached through libcurl", access.description, why);
    return NewClient(access, options, env);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<HttpTransport> transport, NewHttp1Transport(access, options));
  return std::make_unique<Client>(std::move(transport), RetryPolicy{}, access.description, env);
}

}  // namespace gpunode::kube
