#include "kube/http1_transport.h"

#include <array>
#include <cstdlib>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "core/io_deadline.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "http_client/http1_connection.h"
#include "http_client/response_parser.h"
#include "kube/bearer_token.h"

namespace gpunode::kube {

using core::StrAppend;
using core::StrCat;
using http_client::Http1Connection;
using http_client::ResponseParser;
using http_client::TlsContext;

namespace {

// What `access.server` names: where to connect and what to put before each request's path.
struct ServerUrl {
  bool tls = true;
  std::string host;  // an IPv6 literal without its brackets
  std::string port;
  bool default_port = true;
  std::string base_path;  // "" or "/prefix"
};

absl::StatusOr<ServerUrl> ParseServer(std::string_view server) {
  ServerUrl url;
  size_t scheme_end = server.find("://");
  std::string_view scheme =
      scheme_end == std::string_view::npos ? "" : server.substr(0, scheme_end);
  if (absl::EqualsIgnoreCase(absl::string_view(scheme.data(), scheme.size()), "https")) {
    url.tls = true;
  } else if (absl::EqualsIgnoreCase(absl::string_view(scheme.data(), scheme.size()), "http")) {
    url.tls = false;
  } else {
    return absl::FailedPreconditionError(StrCat("server ", server, " is not an http(s) URL"));
  }
  std::string_view rest = server.substr(scheme_end + 3);
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view path = rest.substr(slash);
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    url.base_path = std::string(path);
  }
  if (authority.find('@') != std::string_view::npos) {
    return absl::FailedPreconditionError("the server URL carries user information");
  }
  std::string_view host = authority;
  std::string_view port;
  if (absl::StartsWith(absl::string_view(host.data(), host.size()), "[")) {
    size_t close = host.find(']');
    if (close == std::string_view::npos) {
      return absl::FailedPreconditionError(StrCat("server ", server, " has an unclosed '['"));
    }
    if (close + 1 < host.size() && host[close + 1] == ':') port = host.substr(close + 2);
    host = host.substr(1, close - 1);
  } else if (size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
  }
  if (host.empty()) return absl::FailedPreconditionError(StrCat("server ", server, " has no host"));
  url.host = std::string(host);
  url.default_port = port.empty();
  url.port = port.empty() ? (url.tls ? "443" : "80") : std::string(port);
  return url;
}

// The proxy variables libcurl reads (it reads http_proxy only in lower case).
constexpr const char* kProxyVariables[] = {"https_proxy", "HTTPS_PROXY", "http_proxy", "ALL_PROXY",
                                           "all_proxy"};

bool HasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

class Http1Transport : public HttpTransport {
 public:
  Http1Transport(ClusterAccess access, TransportOptions options, ServerUrl url)
      : access_(std::move(access)),
        options_(options),
        url_(std::move(url)),
        token_(access_.token, access_.token_file) {}

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override;

 private:
  absl::StatusOr<std::string> RequestText(const HttpRequest& request);
  // The TLS context, built on first use.
  absl::StatusOr<std::shared_ptr<TlsContext>> Tls();
  // One exchange on conn_ (opened if needed). `fresh` is set when the failure came from a reused
  // connection before any byte of an answer, so that sending again on a new one is safe.
  absl::Status Exchange(const HttpRequest& request, const std::string& text, absl::Time deadline,
                        HttpResponse& response, bool& fresh_needed, bool& ended_by_caller);
  // The curl transport's wording: method, URL, what happened and a hint.
  absl::Status Failure(const HttpRequest& request, const absl::Status& cause) const;

  const ClusterAccess access_;
  const TransportOptions options_;
  const ServerUrl url_;
  std::shared_ptr<TlsContext> tls_;
  std::unique_ptr<Http1Connection> conn_;
  BearerToken token_;
};

absl::StatusOr<std::string> Http1Transport::RequestText(const HttpRequest& request) {
  ASSIGN_OR_RETURN(std::string token, token_.Get());
  if (HasLineBreak(request.method) || HasLineBreak(request.path) ||
      HasLineBreak(request.content_type) || HasLineBreak(token) ||
      request.method.find(' ') != std::string::npos) {
    return absl::InvalidArgumentError("a line break in the request line or a header");
  }
  const std::string& name = access_.tls_server_name.empty() ? url_.host : access_.tls_server_name;
  bool ipv6 = name.find(':') != std::string::npos;
  std::string text = StrCat(request.method, " ", url_.base_path, request.path, " HTTP/1.1\r\n",
                            "Host: ", ipv6 ? "[" : "", name, ipv6 ? "]" : "",
                            url_.default_port ? "" : ":", url_.default_port ? "" : url_.port,
                            "\r\nUser-Agent: gpunode/0.1\r\nAccept: application/json\r\n");
  if (!request.content_type.empty()) {
    StrAppend(&text, "Content-Type: ", request.content_type, "\r\n");
  }
  if (!token.empty()) {
    StrAppend(&text, "Authorization: Bearer ", token, "\r\n");
  } else if (!access_.username.empty()) {
    StrAppend(&text, "Authorization: Basic ",
              absl::Base64Escape(StrCat(access_.username, ":", access_.password)), "\r\n");
  }
  if (!request.body.empty() || request.method == "POST" || request.method == "PATCH" ||
      request.method == "PUT") {
    StrAppend(&text, "Content-Length: ", request.body.size(), "\r\n");
  }
  StrAppend(&text, "\r\n", request.body);
  return text;
}

absl::StatusOr<std::shared_ptr<TlsContext>> Http1Transport::Tls() {
  if (!url_.tls) return std::shared_ptr<TlsContext>();
  if (tls_ == nullptr) {
    ASSIGN_OR_RETURN(tls_,
                     TlsContext::Make({.ca_pem = access_.ca_pem,
                                       .insecure_skip_verify = access_.insecure_skip_tls_verify,
                                       .client_cert_pem = access_.client_cert_pem,
                                       .client_key_pem = access_.client_key_pem}));
  }
  return tls_;
}

absl::Status Http1Transport::Exchange(const HttpRequest& request, const std::string& text,
                                      absl::Time deadline, HttpResponse& response,
                                      bool& fresh_needed, bool& ended_by_caller) {
  bool streaming = static_cast<bool>(request.on_body);
  bool reused = conn_ != nullptr;
  if (!reused) {
    ASSIGN_OR_RETURN(std::shared_ptr<TlsContext> tls, Tls());
    const std::string& name = access_.tls_server_name.empty() ? url_.host : access_.tls_server_name;
    ASSIGN_OR_RETURN(
        conn_, Http1Connection::Open(
                   url_.host, url_.port, std::move(tls), name,
                   std::min(deadline, core::IoDeadline::After(options_.connect_timeout).at())));
  }
  // A watch has no overall deadline, but sending its request has the ordinary one.
  absl::Time write_deadline =
      streaming ? core::IoDeadline::After(options_.request_timeout).at() : deadline;
  if (absl::Status st = conn_->WriteAll(text, write_deadline); !st.ok()) {
    fresh_needed = reused && !absl::IsDeadlineExceeded(st);
    return st;
  }
  ResponseParser parser(request.method == "HEAD");
  auto on_body = [&](std::string_view data) {
    bool success = parser.status() >= 200 && parser.status() <= 299;
    if (streaming && success) return request.on_body(data);
    response.body.append(data);
    return true;
  };
  std::array<char, 16 * 1024> buffer;
  bool received = false;
  while (!parser.done() && !parser.stopped()) {
    if (streaming && request.keep_going && !request.keep_going()) {
      ended_by_caller = true;
      break;
    }
    absl::Time until = streaming ? core::IoDeadline::After(absl::Seconds(1)).at() : deadline;
    absl::StatusOr<size_t> n = conn_->Read(buffer.data(), buffer.size(), until);
    if (!n.ok()) {
      if (streaming && absl::IsDeadlineExceeded(n.status())) continue;  // ask keep_going again
      if (absl::IsDeadlineExceeded(n.status())) {
        return absl::DeadlineExceededError(
            StrCat("timed out after ", absl::ToInt64Milliseconds(options_.request_timeout),
                   " ms with ", response.body.size(), " bytes of the body received"));
      }
      fresh_needed = reused && !received;
      return n.status();
    }
    if (*n == 0) {
      fresh_needed = reused && !received;
      RETURN_IF_ERROR(parser.Finish());
      break;
    }
    received = true;
    RETURN_IF_ERROR(parser.Feed(std::string_view(buffer.data(), *n), on_body));
  }
  if (parser.stopped()) ended_by_caller = true;
  response.status = parser.status();
  response.retry_after = parser.retry_after();
  if (!parser.keep_alive()) conn_.reset();
  return absl::OkStatus();
}

absl::StatusOr<HttpResponse> Http1Transport::Send(const HttpRequest& request) {
  absl::StatusOr<std::string> text = RequestText(request);
  // An unreadable token file reads as it does from the curl transport.
  if (absl::IsUnauthenticated(text.status())) return text.status();
  if (!text.ok()) return Failure(request, text.status());
  bool streaming = static_cast<bool>(request.on_body);
  absl::Time deadline =
      streaming ? absl::InfiniteFuture() : core::IoDeadline::After(options_.request_timeout).at();
  for (int attempt = 0;; ++attempt) {
    HttpResponse response;
    bool fresh_needed = false;
    bool ended_by_caller = false;
    absl::Status st = Exchange(request, *text, deadline, response, fresh_needed, ended_by_caller);
    if (st.ok() || ended_by_caller) {
      if (ended_by_caller) conn_.reset();  // the rest of the answer is still on its way
      return response;
    }
    conn_.reset();
    if (!(fresh_needed && attempt == 0)) return Failure(request, st);
  }
}

absl::Status Http1Transport::Failure(const HttpRequest& request, const absl::Status& cause) const {
  std::string hint;
  absl::StatusCode code = absl::StatusCode::kUnavailable;
  if (absl::IsPermissionDenied(cause)) {
    hint = StrCat("; the server's certificate is not trusted by the CA of ", access_.description);
  } else if (absl::IsDeadlineExceeded(cause)) {
    hint = "; raise --request-timeout if the cluster is large";
    code = absl::StatusCode::kDeadlineExceeded;
  }
  return absl::Status(code, StrCat(request.method, " ", access_.server, request.path, ": ",
                                   core::View(cause.message()), hint));
}

}  // namespace

bool Http1CanServe(const ClusterAccess& access, std::string* why) {
  auto refuse = [&](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return false;
  };
  if (access.exec) return refuse("credentials come from a credential plugin");
  for (const char* variable : kProxyVariables) {
    const char* value = std::getenv(variable);
    if (value != nullptr && *value != '\0') return refuse(StrCat("$", variable, " names a proxy"));
  }
  if (absl::StatusOr<ServerUrl> url = ParseServer(access.server); !url.ok()) {
    return refuse(std::string(core::View(url.status().message())));
  }
  return true;
}

absl::StatusOr<std::unique_ptr<HttpTransport>> NewHttp1Transport(const ClusterAccess& access,
                                                                 const TransportOptions& options) {
  std::string why;
  if (!Http1CanServe(access, &why)) {
    return absl::FailedPreconditionError(
        StrCat("the small HTTP/1.1 transport cannot reach ", access.description, ": ", why));
  }
  ASSIGN_OR_RETURN(ServerUrl url, ParseServer(access.server));
  return std::make_unique<Http1Transport>(access, options, std::move(url));
}

}  // namespace gpunode::kube
