// Functions on the request path: the exact preferred-allocation search at 8 and 16 GPUs (and how
// much better it is than a greedy pick), the replica policy, and building an Allocate answer.
#include <random>

#include "benchmark/benchmark.h"
#include "plugin/allocation/best_set.h"
#include "plugin/allocation/link_score.h"
#include "plugin/allocation/replica_policy.h"
#include "plugin/server/request_handler.h"

namespace gpunode::plugin {
namespace {

using plugin_config::SharedAllocationPolicy;

// DGX-1V hybrid cube-mesh (dgx1-v100 profile): NVLink points plus NODE/SYS for the PCIe part.
ScoreMatrix Dgx1() {
  const int nv[8][8] = {{0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0},
                        {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
                        {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
                        {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0}};
  ScoreMatrix m(8, std::vector<int>(8, 0));
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) m[a][b] = nv[a][b] * kPointsPerNvLink + ((a < 4) == (b < 4) ? 20 : 10);
  return m;
}

// 16 GPUs whose pair scores are all different: the search cannot prune on ties, the hard case.
ScoreMatrix Random16(unsigned seed) {
  std::mt19937 random(seed);
  ScoreMatrix m(16, std::vector<int>(16, 0));
  for (int a = 0; a < 16; ++a)
    for (int b = a + 1; b < 16; ++b)
      m[a][b] = m[b][a] = static_cast<int>(random() % 4) * kPointsPerNvLink +
                          static_cast<int>(1 + random() % 5) * 10;
  return m;
}

// 16 GPUs of two 8-GPU NVSwitch trays (HGX-2 style): NV6 inside a tray, SYS between them.
ScoreMatrix TwoTrays16() {
  ScoreMatrix m(16, std::vector<int>(16, 0));
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 16; ++b)
      if (a != b) m[a][b] = (a / 8 == b / 8) ? 6 * kPointsPerNvLink + 20 : 10;
  return m;
}

std::vector<size_t> All(size_t n) {
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;
  return all;
}

// The usual greedy pick: the best pair first, then the GPU that adds most, until full.
std::vector<size_t> Greedy(const ScoreMatrix& m, size_t size) {
  size_t n = m.size();
  std::vector<size_t> set;
  if (size == 1) return {0};
  long best = -1;
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b)
      if (m[a][b] > best) {
        best = m[a][b];
        set = {a, b};
      }
  while (set.size() < size) {
    long best_gain = -1;
    size_t pick = 0;
    for (size_t c = 0; c < n; ++c) {
      if (std::find(set.begin(), set.end(), c) != set.end()) continue;
      long gain = 0;
      for (size_t s : set) gain += m[c][s];
      if (gain > best_gain) {
        best_gain = gain;
        pick = c;
      }
    }
    set.push_back(pick);
  }
  return set;
}

void BM_BestSetDgx1(benchmark::State& state) {
  ScoreMatrix m = Dgx1();
  std::vector<size_t> all = All(8);
  for (auto _ : state) benchmark::DoNotOptimize(BestSet(m, all, {}, state.range(0)));
}
BENCHMARK(BM_BestSetDgx1)->DenseRange(1, 8)->Unit(benchmark::kMicrosecond);

void BM_BestSetRandom16(benchmark::State& state) {
  ScoreMatrix m = Random16(42);
  std::vector<size_t> all = All(16);
  for (auto _ : state) benchmark::DoNotOptimize(BestSet(m, all, {}, state.range(0)));
}
BENCHMARK(BM_BestSetRandom16)->Arg(2)->Arg(4)->Arg(8)->Arg(12)->Unit(benchmark::kMicrosecond);

void BM_BestSetTwoTrays16(benchmark::State& state) {
  ScoreMatrix m = TwoTrays16();
  std::vector<size_t> all = All(16);
  for (auto _ : state) benchmark::DoNotOptimize(BestSet(m, all, {}, state.range(0)));
}
BENCHMARK(BM_BestSetTwoTrays16)->Arg(4)->Arg(8)->Arg(12)->Unit(benchmark::kMicrosecond);

void BM_Greedy16(benchmark::State& state) {
  ScoreMatrix m = Random16(42);
  for (auto _ : state) benchmark::DoNotOptimize(Greedy(m, state.range(0)));
}
BENCHMARK(BM_Greedy16)->Arg(8)->Unit(benchmark::kMicrosecond);

// How often, and by how much, a greedy pick scores below the optimum: every size on the DGX-1
// matrix and 200 random 16-GPU matrices at sizes 2..15.
void BM_ExactVersusGreedy(benchmark::State& state) {
  int cases = 0, worse = 0;
  double total_gap = 0, max_gap = 0;
  auto compare = [&](const ScoreMatrix& m, size_t size) {
    long exact = SetScore(m, BestSet(m, All(m.size()), {}, size));
    long greedy = SetScore(m, Greedy(m, size));
    ++cases;
    if (greedy < exact) {
      ++worse;
      double gap = 100.0 * (exact - greedy) / exact;
      total_gap += gap;
      max_gap = std::max(max_gap, gap);
    }
  };
  for (auto _ : state) {
    cases = worse = 0;
    total_gap = max_gap = 0;
    for (size_t size = 2; size <= 8; ++size) compare(Dgx1(), size);
    int dgx1_worse = worse;
    state.counters["dgx1_greedy_worse_sizes"] = dgx1_worse;
    for (unsigned seed = 0; seed < 200; ++seed)
      for (size_t size = 2; size < 16; ++size) compare(Random16(seed), size);
  }
  state.counters["cases"] = cases;
  state.counters["greedy_worse_pct"] = 100.0 * worse / cases;
  state.counters["mean_gap_when_worse_pct"] = worse ? total_gap / worse : 0;
  state.counters["max_gap_pct"] = max_gap;
}
BENCHMARK(BM_ExactVersusGreedy)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_PickSharedDistributed(benchmark::State& state) {
  Resource r;
  r.replicas = 4;
  for (int g = 0; g < 8; ++g)
    for (int k = 0; k < 4; ++k) {
      PluginDevice d;
      d.uuid = "GPU-" + std::to_string(g);
      d.id = d.uuid + "::" + std::to_string(k);
      d.gpu = g;
      r.devices.push_back(d);
    }
  std::vector<size_t> all = All(r.devices.size());
  for (auto _ : state)
    benchmark::DoNotOptimize(PickShared(r, all, {}, 4, SharedAllocationPolicy::kDistributed));
}
BENCHMARK(BM_PickSharedDistributed)->Unit(benchmark::kMicrosecond);

void BM_HandleAllocate(benchmark::State& state) {
  auto plugin_state = std::make_shared<PluginState>();
  for (unsigned i = 0; i < 8; ++i) {
    NodeGpu gpu;
    gpu.index = i;
    gpu.uuid = "GPU-0000000" + std::to_string(i) + "-1111-2222-3333-444444444444";
    gpu.minor = i;
    plugin_state->node.gpus.push_back(gpu);
  }
  plugin_state->node.scores = Dgx1();
  plugin_state->config.pass_device_specs = true;
  plugin_state->host.control = {"/dev/nvidiactl", "/dev/nvidia-uvm"};
  std::vector<std::string> warnings;
  Resource resource = BuildResources(plugin_state->node, plugin_state->config, &warnings)->front();
  health::HealthBoard board;
  RequestHandler handler(resource, plugin_state, board);
  v1beta1::AllocateRequest request;
  auto* c = request.add_container_requests();
  c->add_devices_ids(resource.devices[1].id);
  c->add_devices_ids(resource.devices[3].id);
  for (auto _ : state) benchmark::DoNotOptimize(handler.Allocate(request));
}
BENCHMARK(BM_HandleAllocate)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpunode::plugin

BENCHMARK_MAIN();
