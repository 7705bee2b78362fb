#include "http/http_module.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string>

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
