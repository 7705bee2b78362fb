// A libgpunode-http.so lookalike from "another build": it exports the factory under the same
// name, and (unless built with GPUNODE_FOREIGN_WITHOUT_IDENTITY, as a module older than the
// identity check) an identity with another interface hash. The loader must refuse it before it
// calls the factory, which here says so if it is ever reached.
#include "http/http_server.h"

extern "C" __attribute__((visibility("default"))) gpunode::http::HttpServer*
gpunode_http_create_server_v1(const gpunode::http::ServerOptions&, gpunode::http::Result& result) {
  result = {gpunode::http::ErrorKind::kInternal, "the foreign module's factory was called"};
  return nullptr;
}

#ifndef GPUNODE_FOREIGN_WITHOUT_IDENTITY
extern "C" __attribute__((visibility("default"))) const gpunode::http::ModuleIdentity*
gpunode_http_module_identity_v1() {
  static const gpunode::http::ModuleIdentity identity = {
      gpunode::http::kInterfaceVersion, sizeof(gpunode::http::ServerOptions),
      sizeof(gpunode::http::Result), sizeof(gpunode::http::Response),
      "0000000000000000000000000000000000000000000000000000000000000000"};
  return &identity;
}
#endif
