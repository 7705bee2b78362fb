#include "test_support.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "httplib.h"

namespace gpunode::testing {

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

std::string UrlEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
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
