// A long run of the device plugin and the exporter on one simulated node under churn: the
// kubelet double restarts every 10 simulated seconds, an XID storm every 7 (memory errors whose
// row remap is applied later, bursts of contained ECC errors, NVLink errors, application XIDs),
// a GPU falls off the bus and comes back every simulated minute, and processes start and exit;
// meanwhile Allocate is called on devices the last ListAndWatch update called Healthy, /metrics is
// scraped without a pause, and `gpunode cluster drain` and `restore` run one after the other
// against an API server double that answers each with bursts of 5xx. It reports what an operator
// would ask after a day: registrations lost, crashes, Allocate errors a healthy device should not
// give, RSS, descriptors and threads at the start and the end, and the recovery decisions the
// plugin made. Exit 1 when a goal is missed.
//
// Usage: soak_driver --binary build/gpunode --profile sim/profiles/dgx-h100.yaml
//          --drain-fixture tests/fixtures/cluster/drain.json --duration-s 45 --clock-scale 20
//          --workdir DIR [--scrapes 100000]
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/apiserver_double.h"
#include "kubelet_double.h"
#include "process.h"
#include "test_support.h"

namespace {

using namespace gpunode;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Options {
  std::string binary = "build/gpunode";
  std::string profile = "sim/profiles/dgx-h100.yaml";
  std::string drain_fixture = "tests/fixtures/cluster/drain.json";
  double duration_s = 45;
  double clock_scale = 20;  // simulated seconds per real second
  std::string workdir;
  long scrapes = 100000;  // of /metrics over the run
};

struct Sample {
  long rss_kib = 0;
  long fds = 0;
  long threads = 0;
};

Sample SampleOf(pid_t pid) {
  Sample s;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kib = std::atol(line.c_str() + 6);
    if (line.rfind("Threads:", 0) == 0) s.threads = std::atol(line.c_str() + 8);
  }
  if (DIR* dir = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') ++s.fds;
    }
    closedir(dir);
  }
  return s;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// The profile with a timeline of `sim_seconds` of churn appended (seeded: every run the same).
std::string ChurnProfile(const Options& o, double sim_seconds) {
  std::ifstream in(o.profile);
  std::stringstream text;
  text << in.rdbuf() << "timeline:\n";
  std::mt19937 random(20261201);
  auto at = [](double s) { return std::to_string(static_cast<long>(s * 1000)) + "ms"; };
  // GPU 5 falls off the bus every simulated minute and answers 5 s later.
  for (double t = 30; t + 5 < sim_seconds; t += 60) {
    text << "  - {at: " << at(t) << ", gpu: 5, event: fall_off_bus}\n";
    text << "  - {at: " << at(t + 5) << ", gpu: 5, event: recover}\n";
  }
  // A storm every 7 simulated seconds on GPUs 0-4 and 6.
  const unsigned storm_gpus[] = {0, 1, 2, 3, 4, 6};
  for (double t = 3; t + 4 < sim_seconds; t += 7) {
    unsigned gpu = storm_gpus[random() % 6];
    switch (random() % 4) {
      case 0:  // a double-bit error whose remap a reset applies 3 s later
        text << "  - {at: " << at(t) << ", gpu: " << gpu
             << ", event: remap, pending: true, uncorrected: 1}\n";
        text << "  - {at: " << at(t) << ", gpu: " << gpu << ", event: xid, xid: 48}\n";
        text << "  - {at: " << at(t + 3) << ", gpu: " << gpu << ", event: remap, pending: false}\n";
        break;
      case 1:
        for (int i = 0; i < 3; ++i)
          text << "  - {at: " << at(t + i * 0.1) << ", gpu: " << gpu << ", event: xid, xid: 94}\n";
        break;
      case 2:
        text << "  - {at: " << at(t) << ", gpu: " << gpu << ", event: xid, xid: 74}\n";
        break;
      default:  // the application's: never marks anything
        text << "  - {at: " << at(t) << ", gpu: " << gpu << ", event: xid, xid: 13}\n";
        break;
    }
  }
  // Processes come and go on GPU 7 every 5 simulated seconds (a day stays under the simulator's
  // 100,000 timeline events).
  for (double t = 1, pid = 50000; t + 1 < sim_seconds; t += 5, ++pid) {
    text << "  - {at: " << at(t) << ", gpu: 7, event: process_start, pid: " << pid
         << ", used_memory_mib: 2048}\n";
    text << "  - {at: " << at(t + 1) << ", gpu: 7, event: process_exit, pid: " << pid << "}\n";
  }
  std::string path = o.workdir + "/soak-node.yaml";
  std::ofstream(path) << text.str();
  return path;
}

struct DrainCounts {
  long drains = 0;
  long drain_failures = 0;
  long restores = 0;
  long restore_failures = 0;
  long injected_errors = 0;
};

// One drain and restore of node gpu-a of the drain fixture, through the real binary, against a
// fresh API server double that fails the first evictions, node patches and pod lists with 1-3
// answers of 500 or 503 (sometimes with Retry-After: 0). Every one of those must be retried: the
// drain completes (exit 0, GPU pods gone, the node labelled and cordoned) and the restore lifts
// both. A failure is printed with the command's output.
void DrainAndRestoreOnce(const Options& o, std::mt19937& random, DrainCounts& counts) {
  testing::ApiServerDouble::Options plain_http;
  plain_http.token = "";
  testing::ApiServerDouble server(plain_http);
  if (!server.Start() || !server.LoadList(o.drain_fixture)) {
    std::cerr << "soak: the API server double cannot serve " << o.drain_fixture << "\n";
    ++counts.drain_failures;
    return;
  }
  server.SetDisruptionsAllowed("serving", "infer", 1);
  auto burst = [&](const char* method, const char* path) {
    int count = 1 + static_cast<int>(random() % 3);
    server.FailNext(method, path, random() % 2 ? 503 : 500, count, random() % 2 ? 0 : -1);
    counts.injected_errors += count;
  };
  burst("POST", "/api/v1/namespaces/");  // evictions
  burst("PATCH", "/api/v1/nodes/gpu-a");
  burst("GET", "/api/v1/pods");
  std::string kubeconfig = o.workdir + "/kubeconfig";
  std::ofstream(kubeconfig) << server.PlainKubeconfig();
  testing::ProcessResult drain =
      testing::RunProcess({o.binary, "cluster", "drain", "gpu-a", "--cordon", "--force",
                           "--delete-emptydir-data", "--timeout", "0", "--eviction-retry-interval",
                           "50ms", "--poll-interval", "50ms", "--kubeconfig", kubeconfig});
  ++counts.drains;
  std::optional<nlohmann::json> node = server.Node("gpu-a");
  bool drained =
      drain.exit_code == 0 && node &&
      node->value("/metadata/labels/nvidia.com~1gpu.state"_json_pointer, "") == "draining" &&
      !server.Pod("ml", "train-llama-6c8d7f9b5-q4x2z") &&
      !server.Pod("serving", "infer-7b9d6c5f4-p2r8s");
  if (!drained) {
    ++counts.drain_failures;
    std::cerr << "soak: drain (exit " << drain.exit_code << "): " << drain.out << drain.err;
    return;
  }
  burst("PATCH", "/api/v1/nodes/gpu-a");
  testing::ProcessResult restore =
      testing::RunProcess({o.binary, "cluster", "restore", "gpu-a", "--kubeconfig", kubeconfig});
  ++counts.restores;
  node = server.Node("gpu-a");
  bool restored = restore.exit_code == 0 && node &&
                  !node->value("/metadata/labels"_json_pointer, nlohmann::json::object())
                       .contains("nvidia.com/gpu.state") &&
                  !node->value("/spec/unschedulable"_json_pointer, false);
  if (!restored) {
    ++counts.restore_failures;
    std::cerr << "soak: restore (exit " << restore.exit_code << "): " << restore.out << restore.err;
  }
}

int Run(const Options& o) {
  namespace fs = std::filesystem;
  const double sim_seconds = o.duration_s * o.clock_scale;
  const std::string kubelet_dir = o.workdir + "/device-plugins";
  fs::create_directories(kubelet_dir);
  std::string profile = ChurnProfile(o, sim_seconds);
  std::vector<std::string> env = {"GPUNODE_SIM_CLOCK_SCALE=" + std::to_string(o.clock_scale)};

  testing::KubeletDouble kubelet(kubelet_dir);
  if (!kubelet.Start()) {
    std::cerr << "soak: the kubelet double cannot serve " << kubelet.socket_path() << "\n";
    return 2;
  }
  testing::BackgroundProcess plugin(
      {o.binary, "--sim", profile, "--log-level", "info", "device-plugin", "--kubelet-dir",
       kubelet_dir, "--cdi-spec-dir", o.workdir, "--health-recovery-period", "500ms"},
      testing::BackgroundProcess::Options{.extra_env = env,
                                          .stderr_path = o.workdir + "/plugin.log"});
  int port = testing::FreeLoopbackPort();
  testing::BackgroundProcess exporter(
      {o.binary, "--sim", profile, "exporter", "--listen", "127.0.0.1:" + std::to_string(port),
       "--interval", "100ms", "--pod-resources-socket", ""},
      testing::BackgroundProcess::Options{.extra_env = env,
                                          .stderr_path = o.workdir + "/exporter.log"});
  const std::string resource = "nvidia.com/gpu";
  // A day of timeline takes seconds of CPU to load; on a busy machine, more.
  if (!kubelet.WaitForRegistration(resource, 1, milliseconds(120000)) ||
      !testing::Eventually([&] { return testing::HttpGet(port, "/healthz").status == 200; },
                           milliseconds(120000))) {
    std::cerr << "soak: the plugin or the exporter did not start; see " << o.workdir << "\n";
    return 1;
  }
  Sample plugin_start = SampleOf(plugin.pid());
  Sample exporter_start = SampleOf(exporter.pid());

  std::atomic<bool> done{false};
  std::atomic<long> scrapes{0}, scrape_failures{0};
  // --scrapes spread evenly over the run (a pace, not a wait for a result).
  const auto scrape_every = std::chrono::microseconds(
      static_cast<long>(o.duration_s * 1e6 / std::max<long>(1, o.scrapes)));
  std::thread scraper([&] {
    auto next = Clock::now();
    while (!done) {
      std::this_thread::sleep_until(next);
      next += scrape_every;
      testing::HttpResult r = testing::HttpGet(port, "/metrics");
      ++scrapes;
      if (r.status != 200 || r.body.find("DCGM_FI_DEV_GPU_TEMP") == std::string::npos)
        ++scrape_failures;
    }
  });

  // Drains and restores one after the other for the whole run, each against bursts of 5xx.
  DrainCounts drain_counts;
  std::thread drainer([&] {
    std::mt19937 random(20261202);
    while (!done) DrainAndRestoreOnce(o, random, drain_counts);
  });

  long restarts = 0, lost = 0, allocations = 0, refused_unhealthy = 0, bad_allocations = 0;
  const auto restart_every = milliseconds(static_cast<long>(10'000 / o.clock_scale));
  const auto end = Clock::now() + milliseconds(static_cast<long>(o.duration_s * 1000));
  int registrations = 1;
  size_t next_update = 0;
  std::optional<std::pair<size_t, testing::DeviceUpdate>> newest;
  auto next_restart = Clock::now() + restart_every;
  while (Clock::now() < end) {
    if (Clock::now() >= next_restart) {
      kubelet.Restart();
      ++restarts;
      next_restart = Clock::now() + restart_every;
      if (kubelet.WaitForRegistration(resource, registrations + 1, milliseconds(5000))) {
        ++registrations;
      } else {
        ++lost;
        registrations = kubelet.RegistrationCount(resource);
      }
    }
    // The newest ListAndWatch update: Allocate one device it calls Healthy.
    while (auto next = kubelet.WaitForDevices(
               resource, [](const std::vector<testing::DeviceState>&) { return true; },
               milliseconds(0), next_update)) {
      newest = next;
      next_update = next->first + 1;
    }
    if (newest) {
      std::vector<std::string> healthy;
      for (const testing::DeviceState& d : newest->second.devices)
        if (d.health == "Healthy") healthy.push_back(d.id);
      if (!healthy.empty()) {
        std::vector<v1beta1::ContainerAllocateResponse> responses;
        grpc::Status st =
            kubelet.Allocate(resource, {{healthy[allocations % healthy.size()]}}, &responses);
        ++allocations;
        if (!st.ok()) {
          // A device can go Unhealthy after the update the kubelet saw: the lagging view the
          // kubelet has too. Anything else is an error a healthy device must not give.
          if (st.error_message().find("is Unhealthy") != std::string::npos) {
            ++refused_unhealthy;
          } else if (st.error_code() != grpc::StatusCode::UNAVAILABLE) {
            ++bad_allocations;
            std::cerr << "soak: Allocate: " << st.error_message() << "\n";
          }
        }
      }
    }
    std::this_thread::sleep_for(milliseconds(20));  // pacing of the load, not a wait for a result
  }
  done = true;
  scraper.join();
  drainer.join();

  bool plugin_alive = plugin.Running();
  bool exporter_alive = exporter.Running();
  Sample plugin_end = plugin_alive ? SampleOf(plugin.pid()) : Sample{};
  Sample exporter_end = exporter_alive ? SampleOf(exporter.pid()) : Sample{};
  int plugin_exit = plugin.Stop(SIGTERM);
  int exporter_exit = exporter.Stop(SIGTERM);
  std::string log = plugin.Log();
  long crashes = (plugin_alive ? 0 : 1) + (exporter_alive ? 0 : 1) + (plugin_exit != 0 ? 1 : 0) +
                 (exporter_exit != 0 ? 1 : 0);

  std::printf("simulated: %.0f s in %.0f s (clock scale %.0f)\n", sim_seconds, o.duration_s,
              o.clock_scale);
  std::printf("kubelet restarts: %ld, registrations lost: %ld\n", restarts, lost);
  std::printf("crashes or unclean exits: %ld\n", crashes);
  std::printf("Allocate calls: %ld, refused as Unhealthy (lagging view): %ld, other errors: %ld\n",
              allocations, refused_unhealthy, bad_allocations);
  std::printf("scrapes: %ld, failed: %ld\n", scrapes.load(), scrape_failures.load());
  std::printf(
      "drains / failed: %ld / %ld, restores / failed: %ld / %ld, 5xx answers injected: %ld\n",
      drain_counts.drains, drain_counts.drain_failures, drain_counts.restores,
      drain_counts.restore_failures, drain_counts.injected_errors);
  std::printf(
      "health: %zu Unhealthy, %zu recovered on evidence, %zu waits for evidence, %zu held\n",
      Count(log, "is Unhealthy:"), Count(log, "is Healthy again:"), Count(log, "stays Unhealthy: "),
      Count(log, "stays Unhealthy until the plugin"));
  std::printf("plugin   RSS %ld -> %ld KiB, fds %ld -> %ld, threads %ld -> %ld\n",
              plugin_start.rss_kib, plugin_end.rss_kib, plugin_start.fds, plugin_end.fds,
              plugin_start.threads, plugin_end.threads);
  std::printf("exporter RSS %ld -> %ld KiB, fds %ld -> %ld, threads %ld -> %ld\n",
              exporter_start.rss_kib, exporter_end.rss_kib, exporter_start.fds, exporter_end.fds,
              exporter_start.threads, exporter_end.threads);

  // Descriptors and threads must come back to where they were (a stream or a scrape in flight at
  // either sample may hold one or two).
  bool flat = plugin_end.fds <= plugin_start.fds + 2 &&
              exporter_end.fds <= exporter_start.fds + 2 &&
              plugin_end.threads <= plugin_start.threads + 2 &&
              exporter_end.threads <= exporter_start.threads + 2;
  bool ok = lost == 0 && crashes == 0 && bad_allocations == 0 && scrape_failures == 0 && flat &&
            restarts > 0 && allocations > 0 && drain_counts.drains > 0 &&
            drain_counts.drain_failures == 0 && drain_counts.restore_failures == 0;
  std::printf("%s\n", ok ? "soak: every goal met" : "soak: a goal was missed");
  if (!ok)
    std::printf("logs: %s/plugin.log, %s/exporter.log\n", o.workdir.c_str(), o.workdir.c_str());
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--binary") {
      o.binary = value;
    } else if (flag == "--profile") {
      o.profile = value;
    } else if (flag == "--duration-s") {
      o.duration_s = std::atof(value.c_str());
    } else if (flag == "--clock-scale") {
      o.clock_scale = std::atof(value.c_str());
    } else if (flag == "--drain-fixture") {
      o.drain_fixture = value;
    } else if (flag == "--workdir") {
      o.workdir = value;
    } else if (flag == "--scrapes") {
      o.scrapes = std::atol(value.c_str());
    } else {
      std::cerr << "soak_driver: unknown flag " << flag
                << "; use --binary, --profile, --drain-fixture, --duration-s, --clock-scale, "
                   "--workdir, --scrapes\n";
      return 2;
    }
  }
  if (o.workdir.empty() || o.duration_s <= 0 || o.clock_scale <= 0 ||
      o.duration_s * o.clock_scale > 24 * 3600) {
    std::cerr << "soak_driver: give --workdir, and a --duration-s and --clock-scale whose product "
                 "is at most one simulated day (86400)\n";
    return 2;
  }
  return Run(o);
}
