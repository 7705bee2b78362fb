#include "plugin/server/plugin_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {

PluginServer::PluginServer(std::shared_ptr<const RequestHandler> handler,
                           health::HealthBoard& board, std::string socket_path)
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
  server_ = std::make_unique<h2grpc::Server>(service_->Methods());
  if (absl::Status st = server_->Start(socket_path_); !st.ok()) {
    server_.reset();
    service_.reset();
    return absl::UnavailableError(absl::StrCat(
        st.message(), "; is the directory writable and on a filesystem that supports sockets?"));
  }
  spdlog::info("{}: serving on {}", handler_->resource().name, socket_path_);
  return absl::OkStatus();
}

void PluginServer::Stop() {
  if (!server_) return;
  service_->Stop();
  server_->Stop();
  server_.reset();
  service_.reset();
  if (SocketExists()) unlink(socket_path_.c_str());
}

}  // namespace gpunode::plugin
