#include "plugin/server/plugin_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {

PluginServer::PluginServer(std::shared_ptr<const RequestHandler> handler, HealthBoard& board,
                           std::string socket_path)
    : handler_(std::move(handler)), board_(board), socket_path_(std::move(socket_path)) {}

PluginServer::~PluginServer() { Stop(); }

bool PluginServer::SocketExists() const {
  struct stat st {};
  return lstat(socket_path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

absl::Status PluginServer::Start() {
  Stop();
  // A socket left by an earlier run would make bind fail.
  if (SocketExists()) unlink(socket_path_.c_str());
  service_ = std::make_unique<PluginService>(handler_, board_);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("unix:", socket_path_), grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  // The kubelet is the only client: a small pool is plenty and keeps the daemon small.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 2);
  server_ = builder.BuildAndStart();
  if (!server_) {
    service_.reset();
    return absl::UnavailableError(
        absl::StrCat("cannot serve on ", socket_path_,
                     "; is the directory writable and on a filesystem that supports sockets?"));
  }
  spdlog::info("{}: serving on {}", handler_->resource().name, socket_path_);
  return absl::OkStatus();
}

void PluginServer::Stop() {
  if (!server_) return;
  service_->Stop();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  server_.reset();
  service_.reset();
  if (SocketExists()) unlink(socket_path_.c_str());
}

}  // namespace gpunode::plugin
