#include "test_support.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "httplib.h"

extern char** environ;

namespace gpunode::testing {
namespace {

std::string TempRoot() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv,
                                     const std::vector<std::string>& extra_env) {
  std::string tmpl = TempRoot() + "/gpunode-proc-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, (dir_ + "/stdout").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, (dir_ + "/stderr").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp, args;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0] + " failed");
}

BackgroundProcess::~BackgroundProcess() {
  if (Running()) Stop(SIGKILL);
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool BackgroundProcess::Running() {
  if (exit_code_ >= 0) return false;
  int status = 0;
  pid_t done = waitpid(pid_, &status, WNOHANG);
  if (done == pid_) exit_code_ = DecodeStatus(status);
  return exit_code_ < 0;
}

int BackgroundProcess::Stop(int signal) {
  if (!Running()) return exit_code_;
  kill(pid_, signal);
  for (int i = 0; i < 2000 && Running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (Running()) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    exit_code_ = DecodeStatus(status);
  }
  return exit_code_;
}

std::string BackgroundProcess::Stdout() const { return ReadText(dir_ + "/stdout"); }
std::string BackgroundProcess::Stderr() const { return ReadText(dir_ + "/stderr"); }

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = TempRoot() + "/" + prefix + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

HttpResult HttpGet(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  HttpResult result;
  if (httplib::Result res = client.Get(path.c_str())) {
    result.status = res->status;
    result.body = res->body;
    result.content_type = res->get_header_value("Content-Type");
  }
  return result;
}

bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return done();
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

namespace {

template <typename Fn>
void ForEachSample(const std::string& exposition, const std::string& metric,
                   const std::vector<std::string>& labels, Fn fn) {
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.compare(0, metric.size(), metric) != 0) continue;
    char next = line.size() > metric.size() ? line[metric.size()] : '\0';
    if (next != '{' && next != ' ') continue;
    bool match = true;
    for (const std::string& label : labels) {
      if (line.find("{" + label) == std::string::npos &&
          line.find("," + label) == std::string::npos) {
        match = false;
        break;
      }
    }
    if (!match) continue;
    size_t space = line.rfind(' ');
    if (!fn(std::stod(line.substr(space + 1)))) return;
  }
}

}  // namespace

double SampleValue(const std::string& exposition, const std::string& metric,
                   const std::vector<std::string>& labels) {
  double value = std::nan("");
  ForEachSample(exposition, metric, labels, [&](double v) {
    value = v;
    return false;
  });
  return value;
}

int SampleCount(const std::string& exposition, const std::string& metric,
                const std::vector<std::string>& labels) {
  int count = 0;
  ForEachSample(exposition, metric, labels, [&](double) {
    ++count;
    return true;
  });
  return count;
}

}  // namespace gpunode::testing
