// An HttpServer for plain HTTP/1.1, in the binary: the exporter's /metrics needs no TLS, and the
// module (libgpunode-http.so, cpp-httplib) maps and initialises OpenSSL whatever its options,
// 3.4 MiB of an idle exporter. HTTPS stays with the module (http_module.h picks).
//
// What it does: exact-path routes for GET (HEAD answered from the GET route without the body) and
// POST; bodies by Content-Length up to max_payload_length (413 above; a chunked request body is
// answered 501); `Expect: 100-continue`; keep-alive as HTTP/1.1 and 1.0 define it, up to
// keep_alive_max_count requests and keep_alive_timeout_s idle; a whole request must arrive within
// read_timeout_s of its first byte (a slow client cannot hold a worker), a response be taken
// within as long. 404 for a path no route has, 405 with Allow for one with another method.
//
// Threads: Start runs an accept thread; each accepted connection is served by one of at most
// worker_threads workers, started as connections come (an idle exporter has none) and kept;
// connections beyond them wait in a queue. Stop wakes every wait at once, kept-alive connections
// included, so a stopping exporter does not wait out a keep-alive timeout.
#pragma once

#include <memory>

#include "http/http_server.h"

namespace gpunode::http {

// Null with `result` saying why for options it cannot serve (TLS).
std::unique_ptr<HttpServer> NewPlainServer(const ServerOptions& options, Result& result);

}  // namespace gpunode::http
