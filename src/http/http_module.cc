#include "http/http_module.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/loaded_library.h"
#include "http/plain_server.h"

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
        " built with this binary next to it (servers with TLS, the webhook's, load it "
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
absl::Status CheckIdentity(const core::LoadedLibrary& module, const std::string& path) {
  const ModuleIdentity ours = {kInterfaceVersion, sizeof(ServerOptions), sizeof(Result),
                               sizeof(Response), GPUNODE_HTTP_INTERFACE_HASH};
  auto identify = module.Symbol<ModuleIdentityFunction>(kModuleIdentitySymbol);
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

// A server of the module, which keeps the module loaded until the server is gone: its code,
// vtable included, lives there. The server's destructor stops and joins its threads, so none
// runs the module's code once it is unloaded.
class ModuleServer : public HttpServer {
 public:
  ModuleServer(core::LoadedLibrary module, std::unique_ptr<HttpServer> server)
      : module_(std::move(module)), server_(std::move(server)) {}

  void Get(const std::string& path, Handler handler) override {
    server_->Get(path, std::move(handler));
  }
  void Post(const std::string& path, Handler handler) override {
    server_->Post(path, std::move(handler));
  }
  Result Bind() override { return server_->Bind(); }
  int port() const override { return server_->port(); }
  void Start() override { server_->Start(); }
  void Stop() override { server_->Stop(); }
  bool Wait() override { return server_->Wait(); }

 private:
  core::LoadedLibrary module_;  // declared first, so it goes after server_
  std::unique_ptr<HttpServer> server_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> CreateServer(const ServerOptions& options) {
  if (!options.tls) {
    Result result;
    std::unique_ptr<HttpServer> server = NewPlainServer(options, result);
    if (server == nullptr) return ToStatus(result);
    return server;
  }
  absl::StatusOr<std::string> path = FindModule();
  if (!path.ok()) return path.status();
  absl::StatusOr<core::LoadedLibrary> module =
      core::LoadedLibrary::Open(*path, RTLD_NOW | RTLD_LOCAL);
  if (!module.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("cannot load the HTTP server module ", *path,
                                                      ": ", module.status().message()));
  }
  if (absl::Status same = CheckIdentity(*module, *path); !same.ok()) return same;
  auto create = module->Symbol<CreateServerFunction>(kCreateServerSymbol);
  if (create == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("the HTTP server module ", *path, " does not export ", kCreateServerSymbol,
                     ": it is from another gpunode build; install the ", kModuleFile,
                     " built with this binary"));
  }
  Result result;
  std::unique_ptr<HttpServer> server(create(options, result));
  if (server == nullptr) {
    if (result.ok()) result = {ErrorKind::kInternal, "cannot create the HTTP server"};
    return ToStatus(result);
  }
  return std::make_unique<ModuleServer>(*std::move(module), std::move(server));
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
