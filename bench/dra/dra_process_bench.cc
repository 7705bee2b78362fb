// `gpunode dra-plugin` against the real kube-apiserver of the pinned release, with gRPC's C++
// client in the kubelet's place on the plugin's socket:
//  - NodePrepareResources and NodeUnprepareResources round trips, one claim per call as the
//    kubelet sends them for a pod, each claim new (allocated by writing its status, as the
//    scheduler does), of one GPU and of eight;
//  - from an XID (the simulator's timeline) to the ResourceSlice with the taint accepted by the
//    API server, from the plugin's own log lines;
//  - resident memory, idle after the claims are gone.
// Deployed, the control plane runs on other machines than the GPU node, so the API server's work
// never competes with the plugin's for the node's CPUs. On a machine of two CPUs or more the
// bench gives the control plane (etcd, API server, scheduler, controller manager) the last CPU
// and the plugin with its caller the others; --shared-cpus lets every process run anywhere.
// Usage: dra_process_bench [--shared-cpus] [GPUNODE]   (build-dist/gpunode: as shipped)
#include <grpcpp/grpcpp.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "build_paths.h"
#include "common/proc_status.h"
#include "dra/v1/api.grpc.pb.h"
#include "local_cluster.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"

namespace gpunode {
namespace {

namespace fs = std::filesystem;
namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr char kNode[] = "bench-node";

struct Percentiles {
  double p50, p99, max;
};

Percentiles Of(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    return ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))];
  };
  return {at(0.5), at(0.99), ms.back()};
}

// Milliseconds since midnight of a log line "2026-12-05T16:36:54.719Z info ..." (UTC).
double LogTime(const std::string& line) {
  int h = 0, m = 0;
  double s = 0;
  if (std::sscanf(line.c_str(), "%*d-%*d-%*dT%d:%d:%lfZ", &h, &m, &s) != 3) return -1;
  return ((h * 60 + m) * 60 + s) * 1000;
}

bool Check(const testing::ProcessResult& r, const std::string& what) {
  if (r.exit_code == 0) return true;
  std::cerr << what << ": " << r.err << "\n";
  return false;
}

// `count` claims of `gpus` GPUs each, created and allocated from the node's pool; their UIDs.
std::vector<std::pair<std::string, std::string>> AllocatedClaims(
    const testing::LocalCluster& cluster, const std::string& prefix, int count, int gpus) {
  json claims = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
  for (int i = 0; i < count; ++i) {
    claims["items"].push_back(
        {{"apiVersion", "resource.k8s.io/v1"},
         {"kind", "ResourceClaim"},
         {"metadata", {{"name", prefix + std::to_string(i)}, {"namespace", "default"}}},
         {"spec",
          {{"devices",
            {{"requests", json::array({{{"name", "gpu"},
                                        {"exactly",
                                         {{"deviceClassName", "gpu.nvidia.com"},
                                          {"allocationMode", "ExactCount"},
                                          {"count", gpus}}}}})}}}}}});
  }
  if (!Check(cluster.Kubectl({"create", "-f", "-"}, claims.dump()), "create claims")) return {};
  for (json& claim : claims["items"]) {
    json results = json::array();
    for (int g = 0; g < gpus; ++g) {
      results.push_back({{"request", "gpu"},
                         {"driver", "gpu.nvidia.com"},
                         {"pool", kNode},
                         {"device", "gpu-" + std::to_string(g)}});
    }
    claim["status"] = {{"allocation", {{"devices", {{"results", results}}}}}};
  }
  if (!Check(cluster.Kubectl({"apply", "--server-side", "--subresource=status",
                              "--field-manager=bench-scheduler", "-f", "-"},
                             claims.dump()),
             "allocate claims")) {
    return {};
  }
  testing::ProcessResult listed =
      cluster.Kubectl({"get", "resourceclaims", "-n", "default", "-o", "json"});
  std::vector<std::pair<std::string, std::string>> out;
  json items = json::parse(listed.out)["items"];
  for (const json& item : items) {
    std::string name = item["metadata"]["name"];
    if (name.rfind(prefix, 0) == 0) out.emplace_back(name, item["metadata"]["uid"]);
  }
  return out;
}

// The plugin's own time and the API server's in each preparation of the claims named `prefix`*,
// from the plugin's log lines ("claim default/one-3 (<uid>): prepared 1 device(s) in 1.52 ms,
// 1.10 ms of it the API server's answer").
void PrintTimeSplit(const std::string& log, const std::string& prefix) {
  std::vector<double> own, api_server;
  std::istringstream lines(log);
  const std::string marker = "claim default/" + prefix;
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find(marker);
    if (at == std::string::npos) continue;
    double total = 0, api = 0;
    size_t in = line.find(" device(s) in ", at);
    if (in == std::string::npos ||
        std::sscanf(line.c_str() + in, " device(s) in %lf ms, %lf ms", &total, &api) != 2)
      continue;
    own.push_back(total - api);
    api_server.push_back(api);
  }
  if (own.empty()) {
    std::printf("  (no timed preparation of %s* in the plugin's log)\n", prefix.c_str());
    return;
  }
  Percentiles o = Of(own), a = Of(api_server);
  std::printf(
      "  of which, in the plugin (its log):  the API server's answer p50 %.2f ms, p99 %.2f ms; "
      "the rest p50 %.2f ms, p99 %.2f ms\n",
      a.p50, a.p99, o.p50, o.p99);
}

void PrepareRoundTrips(const testing::LocalCluster& cluster,
                       const testing::BackgroundProcess& plugin, drav1::DRAPlugin::Stub& stub,
                       const std::string& prefix, int count, int gpus) {
  std::vector<std::pair<std::string, std::string>> claims =
      AllocatedClaims(cluster, prefix, count, gpus);
  if (claims.size() != static_cast<size_t>(count)) {
    std::cerr << "expected " << count << " claims named " << prefix << "*, the API has "
              << claims.size() << "\n";
    return;
  }
  std::vector<double> prepare, unprepare;
  for (const auto& [name, uid] : claims) {
    drav1::Claim claim;
    claim.set_namespace_("default");
    claim.set_name(name);
    claim.set_uid(uid);
    drav1::NodePrepareResourcesRequest request;
    *request.add_claims() = claim;
    drav1::NodePrepareResourcesResponse response;
    grpc::ClientContext context;
    auto start = Clock::now();
    grpc::Status status = stub.NodePrepareResources(&context, request, &response);
    prepare.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    const auto& answer = response.claims().at(uid);
    if (!status.ok() || !answer.error().empty() || answer.devices_size() != gpus) {
      std::cerr << "prepare " << name << ": " << status.error_message() << answer.error() << "\n";
      return;
    }
    drav1::NodeUnprepareResourcesRequest undo;
    *undo.add_claims() = claim;
    drav1::NodeUnprepareResourcesResponse undone;
    grpc::ClientContext undo_context;
    start = Clock::now();
    status = stub.NodeUnprepareResources(&undo_context, undo, &undone);
    unprepare.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  Percentiles p = Of(prepare), u = Of(unprepare);
  std::printf(
      "NodePrepareResources, %d GPU(s) per claim, %zu claims: p50 %.2f ms, p99 %.2f ms, "
      "max %.2f ms\n",
      gpus, claims.size(), p.p50, p.p99, p.max);
  PrintTimeSplit(plugin.Log(), prefix);
  std::printf(
      "NodeUnprepareResources, same claims:                 p50 %.2f ms, p99 %.2f ms, "
      "max %.2f ms\n",
      u.p50, u.p99, u.max);
}

// Restricts this process, and what it starts from then on, to `cpus`.
bool PinTo(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::string Names(const std::vector<int>& cpus) {
  std::string out;
  for (int cpu : cpus) out += (out.empty() ? "" : ",") + std::to_string(cpu);
  return out;
}

int Run(const std::string& binary, bool shared_cpus) {
  std::vector<int> node_cpus = AllowedCpus();
  std::vector<int> control_plane_cpus;
  if (!shared_cpus && node_cpus.size() >= 2) {
    control_plane_cpus = {node_cpus.back()};
    node_cpus.pop_back();
    if (!PinTo(control_plane_cpus)) {
      std::perror("sched_setaffinity");
      return 1;
    }
  }
  testing::LocalCluster cluster;
  if (!control_plane_cpus.empty()) {
    if (!PinTo(node_cpus)) {
      std::perror("sched_setaffinity");
      return 1;
    }
    std::printf("control plane on CPU %s; the plugin and its caller on CPU %s\n",
                Names(control_plane_cpus).c_str(), Names(node_cpus).c_str());
  } else {
    std::printf("every process on every CPU (%s)\n", Names(AllowedCpus()).c_str());
  }
  if (!cluster.running()) {
    std::cerr << cluster.missing() << cluster.error() << "\n";
    return 1;
  }
  testing::TempDir dir("gpunode-dra-bench");
  std::string kubelet = dir.path() + "/kubelet";
  for (const char* sub : {"/plugins_registry", "/plugins", "/device-plugins"})
    fs::create_directories(kubelet + sub);
  json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", kNode}}}};
  if (!Check(cluster.Kubectl({"create", "-f", "-"}, node.dump()), "create node")) return 1;
  std::string classes =
      std::string(build_paths::kFixturesDir) + "/../../deploy/dra/deviceclasses.yaml";
  if (!Check(cluster.Kubectl({"apply", "-f", classes}), "device classes")) return 1;

  // dgx-h100 whose timeline has XID 79 on GPU 3 1.7 s after start (tests/fixtures/plugin).
  std::string profile = std::string(build_paths::kFixturesDir) + "/plugin/dgx-h100-xids.yaml";
  testing::ProcessResult inventory =
      testing::RunProcess({binary, "--sim", profile, "inventory", "-o", "json"});
  std::string version = json::parse(inventory.out)["driver_version"];
  std::string lib = dir.path() + "/driver/usr/lib/x86_64-linux-gnu";
  fs::create_directories(lib);
  for (const char* name : {"libcuda.so.", "libnvidia-ml.so."})
    std::ofstream(lib + "/" + name + version);

  // As deployed, the claims' specs go to the host's /var/run/cdi, a tmpfs on systemd hosts; the
  // checkpoint stays on the disk under the kubelet's directory. /dev/shm is this machine's tmpfs.
  std::string cdi_root = dir.path() + "/cdi";
  std::string shm_template = "/dev/shm/gpunode-dra-cdi-XXXXXX";
  if (fs::is_directory("/dev/shm") && mkdtemp(shm_template.data()) != nullptr) {
    cdi_root = shm_template;
  }
  struct RemoveAll {
    std::string path;
    ~RemoveAll() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } remove_cdi_root{cdi_root};
  std::printf("claims' CDI specs in %s\n", cdi_root.rfind("/dev/shm/", 0) == 0
                                               ? "/dev/shm (tmpfs, as /var/run/cdi)"
                                               : "the temporary directory (no /dev/shm)");
  testing::BackgroundProcess plugin(
      {binary, "--log-level", "info", "--sim", profile, "dra-plugin", "--kubelet-dir", kubelet,
       "--cdi-root", cdi_root, "--nvidia-driver-root", dir.path() + "/driver",
       "--nvidia-cdi-hook-path", "", "--health-recovery-period", "0"},
      {"KUBECONFIG=" + cluster.admin_kubeconfig(), std::string("NODE_NAME=") + kNode});
  if (!plugin.WaitForLog("published at generation 2", std::chrono::seconds(30))) {
    return 1;
  }
  // The XID's log line, then the publication that carries its taint.
  std::istringstream log(plugin.Log());
  double xid_at = -1, published_at = -1;
  for (std::string line; std::getline(log, line);) {
    if (xid_at < 0 && line.find("is Unhealthy: XID 79") != std::string::npos)
      xid_at = LogTime(line);
    if (xid_at >= 0 && line.find("published at generation 2") != std::string::npos)
      published_at = LogTime(line);
  }
  std::printf("XID -> ResourceSlice with the taint accepted by the API server: %.0f ms\n",
              published_at - xid_at);

  auto channel = grpc::CreateChannel("unix:" + kubelet + "/plugins/gpu.nvidia.com/dra.sock",
                                     grpc::InsecureChannelCredentials());
  // The kubelet keeps its connection to the plugin from one call to the next: connected first,
  // the first Prepare measured does not pay for connecting.
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
    std::cerr << "cannot connect to the plugin's socket\n";
    return 1;
  }
  auto stub = drav1::DRAPlugin::NewStub(channel);
  PrepareRoundTrips(cluster, plugin, *stub, "one-", 200, 1);
  PrepareRoundTrips(cluster, plugin, *stub, "eight-", 200, 8);

  std::map<std::string, std::string> status = bench::ProcStatus(plugin.pid());
  std::printf(
      "idle after the claims (dgx-h100, 8 devices published, 0 prepared): VmRSS %s, "
      "RssAnon %s, RssFile %s, threads %s\n",
      status["VmRSS"].c_str(), status["RssAnon"].c_str(), status["RssFile"].c_str(),
      status["Threads"].c_str());
  return 0;
}

}  // namespace
}  // namespace gpunode

int main(int argc, char** argv) {
  bool shared_cpus = argc > 1 && std::string(argv[1]) == "--shared-cpus";
  int next = shared_cpus ? 2 : 1;
  return gpunode::Run(argc > next ? argv[next] : gpunode::build_paths::kBinary, shared_cpus);
}
