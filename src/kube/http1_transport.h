// A small HttpTransport: HTTP/1.1 over one TCP connection (src/http_client/), TLS through mbedTLS
// or the system's OpenSSL, loaded on first use (http_client/tls_client.h says which). It exists
// for the node daemons, which follow one node label and post an event now and then: libcurl would
// map some 8 MiB of code and data (HTTP/2, IDN, SSH, LDAP, Kerberos, compression) into a process
// that idles at under 10 MiB.
//
// What it carries of ClusterAccess, as the curl transport does: https with the cluster's CA (or
// the system trust store when none is given) and verification of the server's name (the host of
// `server`, or `tls_server_name`, which is also sent as SNI and in the Host header, as curl
// does), insecure_skip_tls_verify, a client certificate and key, a bearer token, a token file
// (reread at most once a minute; the last good token is kept while the file cannot be read),
// basic authentication, and plain http. A path prefix in `server` is kept. Timeouts: the connect
// timeout bounds TCP connect and TLS handshake; the request timeout bounds the whole exchange,
// except for a watch (a request with on_body), which runs until the server ends it or
// on_body / keep_going say stop (keep_going is asked at least once a second). The connection is
// kept open between requests when the server allows it; a request whose reused connection turns
// out closed before any answer is sent once more on a new one.
//
// Differences from the curl transport: no gzip is offered (the node roles read one node), and
// responses must be framed by Content-Length, chunked coding or the end of the connection (see
// http_client/response_parser.h for what is refused).
//
// Refused (Http1CanServe says why; NewNodeClient in client.h then uses curl): credential plugins
// (users[].user.exec), a proxy named by https_proxy, HTTPS_PROXY, http_proxy, ALL_PROXY or
// all_proxy (curl honours them and NO_PROXY), a scheme other than http and https, and user
// information in the server URL.
//
// Errors read as the curl transport's: "METHOD server/path: what happened", DeadlineExceeded for
// a timeout (with the --request-timeout hint), Unavailable for everything else, with a hint
// naming the access's description when the certificate was not trusted.
//
// Thread-safety: none, as HttpTransport says: one thread per transport.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

namespace gpunode::kube {

// Whether the small transport can carry requests for `access`; if not, `why` (when given) says
// what needs curl.
bool Http1CanServe(const ClusterAccess& access, std::string* why = nullptr);

// Fails (FailedPrecondition) for an access that Http1CanServe refuses.
absl::StatusOr<std::unique_ptr<HttpTransport>> NewHttp1Transport(const ClusterAccess& access,
                                                                 const TransportOptions& options);

}  // namespace gpunode::kube
