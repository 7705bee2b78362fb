#include "http/http_module.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace gpunode::http {
namespace {

absl::StatusOr<std::string> FindModule() {
  if (const char* path = std::getenv(kModuleEnvironment); path != nullptr && *path != '\0') {
    return std::string(path);
  }
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot locate the gpunode binary: ", ec.message()));
  }
  std::filesystem::path module = self.parent_path() / kModuleFile;
  if (!std::filesystem::exists(module, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the HTTP server module ", module.string(), " is missing; install the ", kModuleFile,
        " built with this binary next to it (the exporter and the webhook load it "
        "from there)"));
  }
  return module.string();
}

std::string Describe(const ModuleIdentity& identity) {
  return absl::StrCat(
      "interface v", identity.interface_version, " ",
      std::string(identity.interface_hash ? identity.interface_hash : "").substr(0, 12), ", sizes ",
      identity.server_options_size, "/", identity.result_size, "/", identity.response_size);
}

// Refuses a module built against another interface before any of its code runs on our structs.
absl::Status CheckIdentity(void* handle, const std::string& path) {
  const ModuleIdentity ours = {kInterfaceVersion, sizeof(ServerOptions), sizeof(Result),
                               sizeof(Response), GPUNODE_HTTP_INTERFACE_HASH};
  auto identify = reinterpret_cast<ModuleIdentityFunction>(dlsym(handle, kModuleIdentitySymbol));
  const ModuleIdentity* theirs = identify ? identify() : nullptr;
  if (theirs != nullptr && theirs->interface_version == ours.interface_version &&
      theirs->server_options_size == ours.server_options_size &&
      theirs->result_size == ours.result_size && theirs->response_size == ours.response_size &&
      theirs->interface_hash != nullptr &&
      std::string_view(theirs->interface_hash) == ours.interface_hash) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "the HTTP server module ", path, " is from another gpunode build (",
      theirs ? Describe(*theirs) : absl::StrCat("no ", kModuleIdentitySymbol), "; this binary has ",
      Describe(ours), "): install the ", kModuleFile, " built with this binary"));
}

absl::StatusOr<CreateServerFunction> LoadModule() {
  static const absl::StatusOr<CreateServerFunction> create =
      []() -> absl::StatusOr<CreateServerFunction> {
    absl::StatusOr<std::string> path = FindModule();
    if (!path.ok()) return path.status();
    // Never closed: the servers' code lives in it, and it stays for the life of the process as a
    // linked library would.
    void* handle = dlopen(path->c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot load the HTTP server module ", *path, ": ", dlerror()));
    }
    if (absl::Status same = CheckIdentity(handle, *path); !same.ok()) return same;
    auto function = reinterpret_cast<CreateServerFunction>(dlsym(handle, kCreateServerSymbol));
    if (function == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("the HTTP server module ", *path, " does not export ", kCreateServerSymbol,
                       ": it is from another gpunode build; install the ", kModuleFile,
                       " built with this binary"));
    }
    return function;
  }();
  return create;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> CreateServer(const ServerOptions& options) {
  absl::StatusOr<CreateServerFunction> create = LoadModule();
  if (!create.ok()) return create.status();
  Result result;
  std::unique_ptr<HttpServer> server((*create)(options, result));
  if (server == nullptr) {
    if (result.ok()) result = {ErrorKind::kInternal, "cannot create the HTTP server"};
    return ToStatus(result);
  }
  return server;
}

absl::Status ToStatus(const Result& result) {
  switch (result.error) {
    case ErrorKind::kNone:
      return absl::OkStatus();
    case ErrorKind::kBadInput:
      return absl::InvalidArgumentError(result.message);
    case ErrorKind::kUnavailable:
      return absl::UnavailableError(result.message);
    case ErrorKind::kInternal:
      break;
  }
  return absl::InternalError(result.message);
}

}  // namespace gpunode::http
