// Whole-process numbers of `gpunode device-plugin` against the kubelet double: start to
// registered, idle memory, Allocate and GetPreferredAllocation round trips over the socket, stop
// time; and the XID-to-Unhealthy latency of the health path measured in-process, where the
// simulator's clock start (nvmlInit) is known to the microsecond.
// Usage: plugin_process_bench [GPUNODE] (default: the binary the tests run, this build's gpunode
// unless GPUNODE_TEST_BINARY names another), so that another build of the binary (e.g.
// build-dist/gpunode) can be measured by the same client.
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "build_paths.h"
#include "common/proc_status.h"
#include "gpunode_sim.h"
#include "harness/apiserver_double.h"
#include "health/health_monitor.h"
#include "kubelet_double.h"
#include "plugin/rm/resources.h"
#include "plugin/server/plugin_server.h"
#include "process.h"
#include "spdlog/spdlog.h"

namespace gpunode {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The process under test; the in-process health path always uses this build's code.
std::string binary = build_paths::kBinary;

std::string Fixture(const std::string& name) {
  return std::string(build_paths::kFixturesDir) + "/plugin/" + name;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Stats {
  double p50, p99, max;
};

Stats Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]; };
  return {at(0.5), at(0.99), v.back()};
}

std::string TempDir() {
  char pattern[] = "/tmp/gpunode-bench-XXXXXX";
  return mkdtemp(pattern);
}

// Resident kB per mapping of /proc/PID/smaps, largest first: the file's name, or "[anonymous]"
// for the heap, stacks and private anonymous mappings together.
std::vector<std::pair<std::string, long>> ResidentByMapping(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps");
  std::map<std::string, long> kb;
  std::string line, mapping;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') < line.find(' ')) {
      // "start-end perms offset dev inode [path]": the path is the sixth field.
      std::istringstream fields(line);
      std::string skip, path;
      for (int i = 0; i < 5; ++i) fields >> skip;
      std::getline(fields >> std::ws, path);
      mapping = path.empty() || path[0] == '[' ? "[anonymous]"
                                               : std::filesystem::path(path).filename().string();
    } else if (line.rfind("Rss:", 0) == 0) {
      kb[mapping] += std::stol(line.substr(4));
    }
  }
  std::vector<std::pair<std::string, long>> sorted(kb.begin(), kb.end());
  std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.second > b.second; });
  return sorted;
}

std::unique_ptr<testing::BackgroundProcess> StartPlugin(const std::string& dir,
                                                        const std::string& sim,
                                                        std::vector<std::string> args,
                                                        std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {binary, "--sim", sim, "device-plugin", "--kubelet-dir", dir};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<testing::BackgroundProcess>(
      argv, testing::BackgroundProcess::Options{.extra_env = std::move(env),
                                                .stderr_path = dir + "/plugin.log"});
}

// How the plugin is configured in IdleAndRoundTrips.
enum class ConfigSource { kFile, kLabelPlainHttp, kLabelTls };

// A CA and a server certificate for 127.0.0.1 in `dir` (ca.crt, tls.crt, tls.key), made with the
// openssl command; false if it failed.
bool MakeCertificates(const std::string& dir) {
  std::ofstream(dir + "/ext.cnf") << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
  std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
  testing::ProcessResult r = testing::RunProcess(
      {"/bin/sh", "-c",
       "set -e; cd '" + dir + "'; openssl req -x509 " + ec +
           "-keyout ca.key -out ca.crt -days 2 -subj /CN=bench-ca 2>/dev/null; openssl req " + ec +
           "-keyout tls.key -out tls.csr -subj /CN=localhost 2>/dev/null; openssl x509 -req -in "
           "tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out tls.crt -days 2 -extfile ext.cnf "
           "2>/dev/null"});
  return r.exit_code == 0;
}

// The same config picked from a directory by the node label nvidia.com/device-plugin.config=ts4,
// which the plugin follows through an API server double: over plain HTTP without credentials, or
// as in a cluster, over HTTPS with a CA and a bearer token.
struct LabelledNode {
  std::unique_ptr<testing::ApiServerDouble> api;
  std::vector<std::string> args, env;

  LabelledNode(const std::string& dir, bool tls) {
    testing::ApiServerDouble::Options options;
    options.token = tls ? "bench-token" : "";
    if (tls) {
      if (!MakeCertificates(dir)) std::cerr << "openssl could not make the certificates\n";
      options.tls_cert = dir + "/tls.crt";
      options.tls_key = dir + "/tls.key";
    }
    api = std::make_unique<testing::ApiServerDouble>(options);
    api->Start();
    api->AddObject(
        {{"kind", "Node"},
         {"apiVersion", "v1"},
         {"metadata",
          {{"name", "gpu-a"}, {"labels", {{"nvidia.com/device-plugin.config", "ts4"}}}}}});
    std::filesystem::create_directories(dir + "/configs");
    std::filesystem::copy_file(Fixture("time-slicing-4.yaml"), dir + "/configs/ts4");
    std::ofstream(dir + "/configs/none") << "version: v1\n";
    if (tls) {
      std::ofstream(dir + "/kubeconfig")
          << "apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster:\n    server: "
          << api->url() << "\n    certificate-authority: " << dir
          << "/ca.crt\nusers:\n- name: bench\n  user:\n    token: bench-token\ncontexts:\n"
             "- name: bench\n  context:\n    cluster: bench\n    user: bench\n"
             "current-context: bench\n";
    } else {
      std::ofstream(dir + "/kubeconfig") << api->PlainKubeconfig();
    }
    args = {"--config-file", dir + "/configs", "--default-config", "none"};
    env = {"NODE_NAME=gpu-a", "KUBECONFIG=" + dir + "/kubeconfig"};
  }
};

void StartToRegistered(int runs) {
  std::vector<double> registered, listed, stop;
  for (int i = 0; i < runs; ++i) {
    std::string dir = TempDir();
    testing::KubeletDouble kubelet(dir);
    kubelet.Start();
    auto begin = Clock::now();
    auto plugin = StartPlugin(dir, "dgx-h100", {"--config-file", Fixture("time-slicing-4.yaml")});
    auto reg = kubelet.WaitForRegistration("nvidia.com/gpu", 1, milliseconds(10000));
    auto list = kubelet.WaitForDevices(
        "nvidia.com/gpu", [](auto& d) { return d.size() == 32; }, milliseconds(10000));
    if (!reg || !list) {
      std::cerr << "run " << i << " did not register:\n" << plugin->Log();
      return;
    }
    registered.push_back(Ms(reg->at - begin));
    listed.push_back(Ms(list->second.at - begin));
    auto term = Clock::now();
    plugin->Signal(SIGTERM);
    plugin->Wait(milliseconds(10000));
    stop.push_back(Ms(Clock::now() - term));
    kubelet.Stop();
    std::filesystem::remove_all(dir);
  }
  Stats r = Summarize(registered), l = Summarize(listed), s = Summarize(stop);
  std::printf("start -> registered (dgx-h100, 4 replicas, %d runs): p50 %.1f ms, p99 %.1f ms\n",
              runs, r.p50, r.p99);
  std::printf("start -> first ListAndWatch (32 devices):            p50 %.1f ms, p99 %.1f ms\n",
              l.p50, l.p99);
  std::printf("SIGTERM -> exited:                                   p50 %.1f ms, p99 %.1f ms\n",
              s.p50, s.p99);
}

void IdleAndRoundTrips(ConfigSource source) {
  std::string dir = TempDir();
  testing::KubeletDouble kubelet(dir);
  kubelet.Start();
  bool follow_label = source != ConfigSource::kFile;
  std::optional<LabelledNode> node;
  if (follow_label) node.emplace(dir, source == ConfigSource::kLabelTls);
  auto plugin = follow_label ? StartPlugin(dir, "dgx-h100", node->args, node->env)
                             : StartPlugin(dir, "dgx-h100",
                                           {"--config-file", Fixture("time-slicing-4.yaml")});
  std::printf("-- %s\n", source == ConfigSource::kFile ? "config file"
                         : source == ConfigSource::kLabelPlainHttp
                             ? "config picked by the node label, followed (a watch), plain HTTP"
                             : "config picked by the node label, followed (a watch), HTTPS");
  auto list = kubelet.WaitForDevices(
      "nvidia.com/gpu", [](auto& d) { return d.size() == 32; }, milliseconds(10000));
  if (!list) {
    std::cerr << plugin->Log();
    return;
  }
  // Let start-up work settle before reading the idle footprint.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto status = bench::ProcStatus(plugin->pid());
  std::printf(
      "idle (dgx-h100, 4 replicas, registered, ListAndWatch open): VmRSS %s, RssAnon %s, "
      "RssFile %s, threads %s\n",
      status["VmRSS"].c_str(), status["RssAnon"].c_str(), status["RssFile"].c_str(),
      status["Threads"].c_str());
  std::printf("  resident by mapping:");
  for (const auto& [name, kb] : ResidentByMapping(plugin->pid())) {
    std::printf(" %s %ld kB;", name.c_str(), kb);
  }
  std::printf("\n");

  std::vector<double> allocate;
  std::vector<v1beta1::ContainerAllocateResponse> responses;
  const auto& devices = list->second.devices;
  for (int i = 0; i < 2000; ++i) {
    auto begin = Clock::now();
    grpc::Status st = kubelet.Allocate("nvidia.com/gpu", {{devices[i % 32].id}}, &responses);
    allocate.push_back(Ms(Clock::now() - begin));
    if (!st.ok()) std::cerr << st.error_message() << "\n";
  }
  Stats a = Summarize(allocate);
  std::printf(
      "Allocate round trip over the socket (2000 calls): p50 %.3f ms, p99 %.3f ms, max "
      "%.3f ms\n",
      a.p50, a.p99, a.max);
  status = bench::ProcStatus(plugin->pid());
  std::printf("after 2000 Allocate calls: VmRSS %s, RssAnon %s\n", status["VmRSS"].c_str(),
              status["RssAnon"].c_str());
  plugin->Signal(SIGTERM);
  plugin->Wait(milliseconds(10000));
  kubelet.Stop();
  std::filesystem::remove_all(dir);
}

void PreferredRoundTrips() {
  std::string dir = TempDir();
  testing::KubeletDouble kubelet(dir);
  kubelet.Start();
  auto plugin = StartPlugin(dir, "dgx1-v100", {});
  auto list = kubelet.WaitForDevices(
      "nvidia.com/gpu", [](auto& d) { return d.size() == 8; }, milliseconds(10000));
  if (!list) return;
  std::vector<std::string> ids;
  for (const auto& d : list->second.devices) ids.push_back(d.id);
  std::vector<double> times;
  std::vector<std::string> out;
  for (int i = 0; i < 1000; ++i) {
    auto begin = Clock::now();
    kubelet.GetPreferredAllocation("nvidia.com/gpu", ids, {}, 1 + i % 8, &out);
    times.push_back(Ms(Clock::now() - begin));
  }
  Stats p = Summarize(times);
  std::printf(
      "GetPreferredAllocation round trip, dgx1-v100, sizes 1..8 (1000 calls): p50 %.3f "
      "ms, p99 %.3f ms\n",
      p.p50, p.p99);
  plugin->Signal(SIGTERM);
  plugin->Wait(milliseconds(10000));
  kubelet.Stop();
  std::filesystem::remove_all(dir);
}

std::unique_ptr<nvml::Library> OpenSimulator(const std::string& spec) {
  void* handle = dlopen(build_paths::kSimLibrary, RTLD_NOW | RTLD_LOCAL);
  auto configure =
      reinterpret_cast<decltype(&gpunodeSimConfigure)>(dlsym(handle, "gpunodeSimConfigure"));
  char error[1024] = {};
  if (configure(spec.c_str(), "", error, sizeof error) != 0) {
    std::cerr << error << "\n";
    return nullptr;
  }
  auto library = nvml::Library::Open({.library_path = build_paths::kSimLibrary});
  dlclose(handle);
  return library.ok() ? std::move(*library) : nullptr;
}

// The simulator delivers XID 48 on GPU k at 500 + 250k ms after nvmlInit; the latency is from
// that moment to the ListAndWatch message that shows GPU k Unhealthy, received over the socket.
void XidToUnhealthy(int runs) {
  std::vector<double> latency;
  double init_uncertainty = 0;
  for (int run = 0; run < runs; ++run) {
    auto before_init = Clock::now();
    std::unique_ptr<nvml::Library> library = OpenSimulator(Fixture("dgx-h100-xid-train.yaml"));
    auto after_init = Clock::now();
    if (!library) return;
    init_uncertainty = std::max(init_uncertainty, Ms(after_init - before_init));
    auto node = plugin::ReadNode(*library, core::HostRoot("/"));
    auto state = std::make_shared<plugin::PluginState>();
    state->node = *node;
    std::vector<std::string> warnings;
    plugin::Resource resource =
        plugin::BuildResources(state->node, state->config, &warnings)->front();
    health::HealthBoard board;
    std::string dir = TempDir();
    {
      auto handler = std::make_shared<plugin::RequestHandler>(resource, state, board);
      plugin::PluginServer server(handler, board, dir + "/nvidia-gpu.sock");
      if (!server.Start().ok()) return;
      auto monitor =
          health::HealthMonitor::Start(*library, plugin::MonitoredGpus(state->node), board,
                                       {.xids = *health::XidPolicyFromEnvironment(nullptr, nullptr),
                                        .recovery_period = milliseconds(0)});
      auto channel = grpc::CreateChannel("unix:" + dir + "/nvidia-gpu.sock",
                                         grpc::InsecureChannelCredentials());
      auto stub = v1beta1::DevicePlugin::NewStub(channel);
      grpc::ClientContext context;
      auto reader = stub->ListAndWatch(&context, v1beta1::Empty());
      v1beta1::ListAndWatchResponse response;
      std::vector<bool> seen(8, false);
      int left = 8;
      while (left > 0 && reader->Read(&response)) {
        auto now = Clock::now();
        for (int k = 0; k < 8; ++k) {
          if (!seen[k] && response.devices(k).health() == "Unhealthy") {
            seen[k] = true;
            --left;
            // Midpoint of the nvmlInit window; the window is reported with the result.
            auto init = before_init + (after_init - before_init) / 2;
            latency.push_back(Ms(now - (init + milliseconds(500 + 250 * k))));
          }
        }
      }
      context.TryCancel();
      reader->Finish();
    }
    std::filesystem::remove_all(dir);
  }
  Stats x = Summarize(latency);
  std::printf(
      "XID -> Unhealthy in ListAndWatch (%zu events): p50 %.2f ms, p99 %.2f ms, max %.2f "
      "ms (clock start known within +-%.2f ms)\n",
      latency.size(), x.p50, x.p99, x.max, init_uncertainty / 2);
}

}  // namespace
}  // namespace gpunode

int main(int argc, char** argv) {
  if (argc > 1) gpunode::binary = argv[1];
  std::printf("binary: %s\n", gpunode::binary.c_str());
  // The in-process health path logs every transition; only the numbers matter here.
  spdlog::set_level(spdlog::level::err);
  gpunode::StartToRegistered(15);
  gpunode::IdleAndRoundTrips(gpunode::ConfigSource::kFile);
  gpunode::IdleAndRoundTrips(gpunode::ConfigSource::kLabelPlainHttp);
  gpunode::IdleAndRoundTrips(gpunode::ConfigSource::kLabelTls);
  gpunode::PreferredRoundTrips();
  gpunode::XidToUnhealthy(3);
  return 0;
}
