// NVIDIA's device plugin (k8s-device-plugin v0.19.1) and gpunode's, measured in the same run on
// the same simulated node and the same kind of kubelet (tests/side_by_side/plugin_node.h: the
// side-by-side test's node, the kubelet double): start to registered, idle memory (RssAnon and
// RssFile), Allocate and GetPreferredAllocation round trips, a kubelet restart to registered
// again, and CPU while idle. Each figure is taken of both, alternating where it is repeated; the
// last column is NVIDIA's over gpunode's. Results: docs/PERFORMANCE.md ("Device plugin beside
// NVIDIA's").
//
// Usage: device_plugin_bench SOURCE_DIR GPUNODE [IDLE_SECONDS] [PROFILE]
//   GPUNODE: the binary under test, its libgpunode-sim.so beside it (the dist build: as shipped)
//   IDLE_SECONDS: how long CPU is counted while idle (default 60); PROFILE: default dgx-h100
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/proc_status.h"
#include "plugin_node.h"

namespace gpunode::bench {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr char kResource[] = "nvidia.com/gpu";

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(p * static_cast<double>(values.size()) + 0.999);
  return values[std::min(values.size(), std::max<size_t>(rank, 1)) - 1];
}

// The CPU the process's threads have run so far, in seconds, from the scheduler's own count
// (/proc/PID/task/TID/schedstat, nanoseconds): utime and stime are sampled at the clock tick, which
// bills a whole tick to whoever runs at that instant and makes a few wakes a second look like
// anything from nothing to ten times their cost. Threads that ended are not counted.
double CpuSeconds(pid_t pid) {
  double ns = 0;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "schedstat");
    double run_ns = 0;
    if (in >> run_ns) ns += run_ns;
  }
  return ns / 1e9;
}

double KiB(const std::map<std::string, std::string>& status, const std::string& key) {
  auto it = status.find(key);
  return it == status.end() ? 0 : std::stod(it->second);
}

struct Figures {
  std::vector<double> start_ms, restart_ms, allocate_ms, preferred_ms;
  double rss_anon_mib = 0, rss_file_mib = 0, idle_cpu_percent = 0;
  int threads = 0;
};

// One plugin started, registered and streaming; nullptr (said on stderr) when it did not.
std::unique_ptr<testing::PluginOnNode> StartRegistered(testing::PluginNode& node, bool nvidias,
                                                       const std::string& profile,
                                                       double* start_ms) {
  testing::PluginRun run;
  run.nvidias = nvidias;
  run.profile = profile;
  std::unique_ptr<testing::PluginOnNode> plugin = node.Start(run);
  auto registered = plugin->kubelet->WaitForRegistration(kResource, 1, 30s);
  if (!registered) {
    std::cerr << (nvidias ? "NVIDIA's" : "gpunode's") << " plugin did not register:\n"
              << plugin->process->Stderr();
    return nullptr;
  }
  if (start_ms != nullptr) {
    // From the plugin's exec (the wrapper writes the wall clock's nanoseconds just before it),
    // not from the namespace's set-up, on the steady clock the registration was stamped with.
    std::ifstream exec_time(plugin->varlib.path() + "/exec-time");
    long long exec_ns = 0;
    exec_time >> exec_ns;
    auto since_exec =
        std::chrono::system_clock::now().time_since_epoch() - std::chrono::nanoseconds(exec_ns);
    *start_ms = Ms(registered->at - (Clock::now() - since_exec));
  }
  plugin->kubelet->WaitForDevices(
      kResource, [](const auto& devices) { return !devices.empty(); }, 10s);
  return plugin;
}

void Measure(testing::PluginNode& node, bool nvidias, const std::string& profile, int idle_seconds,
             Figures& f) {
  // Start to registered, ten times.
  for (int run = 0; run < 10; ++run) {
    double ms = 0;
    if (StartRegistered(node, nvidias, profile, &ms) == nullptr) return;
    f.start_ms.push_back(ms);
  }
  std::unique_ptr<testing::PluginOnNode> plugin = StartRegistered(node, nvidias, profile, nullptr);
  if (plugin == nullptr) return;
  testing::KubeletDouble& kubelet = *plugin->kubelet;
  std::vector<std::string> ids;
  auto update = kubelet.WaitForDevices(
      kResource, [](const auto& devices) { return !devices.empty(); }, 10s);
  if (!update) {
    std::cerr << "the plugin advertised no device:\n" << plugin->process->Stderr();
    return;
  }
  for (const auto& device : update->second.devices) ids.push_back(device.id);
  std::sort(ids.begin(), ids.end());

  // Allocate of one device, 10,000 round trips over the socket.
  for (int call = 0; call < 10000; ++call) {
    std::vector<v1beta1::ContainerAllocateResponse> responses;
    auto start = Clock::now();
    grpc::Status status = kubelet.Allocate(kResource, {{ids[call % ids.size()]}}, &responses);
    f.allocate_ms.push_back(Ms(Clock::now() - start));
    if (!status.ok()) {
      std::cerr << "Allocate failed: " << status.error_message() << "\n";
      return;
    }
  }
  // GetPreferredAllocation of half the GPUs from all, 1,000 round trips.
  for (int call = 0; call < 1000; ++call) {
    std::vector<std::string> chosen;
    auto start = Clock::now();
    grpc::Status status = kubelet.GetPreferredAllocation(kResource, ids, {},
                                                         static_cast<int>(ids.size() / 2), &chosen);
    f.preferred_ms.push_back(Ms(Clock::now() - start));
    if (!status.ok()) {
      std::cerr << "GetPreferredAllocation failed: " << status.error_message() << "\n";
      return;
    }
  }

  // Idle: memory once settled, then CPU over the window.
  std::this_thread::sleep_for(2s);
  pid_t pid = plugin->process->pid();
  auto status = ProcStatus(pid);
  f.rss_anon_mib = KiB(status, "RssAnon") / 1024;
  f.rss_file_mib = KiB(status, "RssFile") / 1024;
  f.threads = static_cast<int>(KiB(status, "Threads"));
  double cpu_before = CpuSeconds(pid);
  std::this_thread::sleep_for(std::chrono::seconds(idle_seconds));
  f.idle_cpu_percent = (CpuSeconds(pid) - cpu_before) / idle_seconds * 100;

  // A kubelet restart to registered again, five times.
  for (int run = 0; run < 5; ++run) {
    int before = kubelet.RegistrationCount(kResource);
    auto start = Clock::now();
    if (!kubelet.Restart()) return;
    if (!kubelet.WaitForRegistration(kResource, before + 1, 30s)) {
      std::cerr << "no registration after a kubelet restart:\n" << plugin->process->Stderr();
      return;
    }
    f.restart_ms.push_back(Ms(Clock::now() - start));
  }
  plugin->process->Stop(SIGTERM);
}

void Row(const std::string& what, double nvidia, double gpunode, const char* unit) {
  std::printf("| %s | %.3g %s | %.3g %s | %.2g |\n", what.c_str(), nvidia, unit, gpunode, unit,
              gpunode == 0 ? 0 : nvidia / gpunode);
}

int Main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: device_plugin_bench SOURCE_DIR GPUNODE [IDLE_SECONDS] [PROFILE]\n";
    return 2;
  }
  int idle_seconds = argc > 3 ? std::atoi(argv[3]) : 60;
  std::string profile = argc > 4 ? argv[4] : "dgx-h100";
  testing::PluginNode node(argv[1], argv[2]);
  if (!node.skip().empty()) {
    std::cerr << node.skip() << "\n";
    return 3;
  }
  if (!node.error().empty()) {
    std::cerr << node.error() << "\n";
    return 1;
  }
  Figures nvidia, gpunode;
  Measure(node, true, profile, idle_seconds, nvidia);
  Measure(node, false, profile, idle_seconds, gpunode);
  std::printf("%s, %ld cores; %s: NVIDIA's device plugin v0.19.1 and %s\n\n", profile.c_str(),
              sysconf(_SC_NPROCESSORS_ONLN), "the kubelet double", argv[2]);
  std::printf("| what | NVIDIA's | gpunode's | NVIDIA's / gpunode's |\n|---|---|---|---|\n");
  Row("RSS idle (RssAnon + RssFile)", nvidia.rss_anon_mib + nvidia.rss_file_mib,
      gpunode.rss_anon_mib + gpunode.rss_file_mib, "MiB");
  Row("RssAnon idle", nvidia.rss_anon_mib, gpunode.rss_anon_mib, "MiB");
  Row("RssFile idle", nvidia.rss_file_mib, gpunode.rss_file_mib, "MiB");
  Row("threads idle", nvidia.threads, gpunode.threads, "");
  Row("start to registered, p50 (10 runs)", Percentile(nvidia.start_ms, 0.5),
      Percentile(gpunode.start_ms, 0.5), "ms");
  Row("start to registered, max", Percentile(nvidia.start_ms, 1), Percentile(gpunode.start_ms, 1),
      "ms");
  Row("Allocate round trip p50 (10,000 calls)", Percentile(nvidia.allocate_ms, 0.5),
      Percentile(gpunode.allocate_ms, 0.5), "ms");
  Row("Allocate round trip p99", Percentile(nvidia.allocate_ms, 0.99),
      Percentile(gpunode.allocate_ms, 0.99), "ms");
  Row("GetPreferredAllocation of half the GPUs, p50 (1,000 calls)",
      Percentile(nvidia.preferred_ms, 0.5), Percentile(gpunode.preferred_ms, 0.5), "ms");
  Row("GetPreferredAllocation p99", Percentile(nvidia.preferred_ms, 0.99),
      Percentile(gpunode.preferred_ms, 0.99), "ms");
  Row("kubelet restart to registered again, p50 (5 runs)", Percentile(nvidia.restart_ms, 0.5),
      Percentile(gpunode.restart_ms, 0.5), "ms");
  Row("CPU while idle (" + std::to_string(idle_seconds) + " s)", nvidia.idle_cpu_percent,
      gpunode.idle_cpu_percent, "% of a core");
  return 0;
}

}  // namespace
}  // namespace gpunode::bench

int main(int argc, char** argv) { return gpunode::bench::Main(argc, argv); }
