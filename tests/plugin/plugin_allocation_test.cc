// Preferred allocation: the exact best set of whole GPUs against a brute-force reference, and
// NVIDIA's packed and distributed policies for replicas.
#include <algorithm>
#include <chrono>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugin/allocation/best_set.h"
#include "plugin/allocation/link_score.h"
#include "plugin/allocation/replica_policy.h"

namespace gpunode::plugin {
namespace {

using plugin_config::SharedAllocationPolicy;

using ::testing::ElementsAre;

// Every subset of `available` of `size` containing `required`; the best score and the
// lexicographically first set with it.
std::pair<long, std::vector<size_t>> BruteForce(const ScoreMatrix& scores,
                                                const std::vector<size_t>& available,
                                                const std::vector<size_t>& required, size_t size) {
  long best = -1;
  std::vector<size_t> best_set;
  size_t n = available.size();
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (static_cast<size_t>(__builtin_popcount(mask)) != size) continue;
    std::vector<size_t> set;
    for (size_t i = 0; i < n; ++i)
      if (mask & (1u << i)) set.push_back(available[i]);
    std::sort(set.begin(), set.end());
    bool has_required = std::all_of(required.begin(), required.end(), [&](size_t r) {
      return std::find(set.begin(), set.end(), r) != set.end();
    });
    if (!has_required) continue;
    long score = SetScore(scores, set);
    if (score > best || (score == best && set < best_set)) {
      best = score;
      best_set = set;
    }
  }
  return {best, best_set};
}

// DGX-1V: NV1/NV2 cube-mesh; NV pairs carry the PCIe level too (NODE in a socket, SYS across).
ScoreMatrix Dgx1() {
  const char* labels[8][8] = {
      {"X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"},
      {"NV1", "X", "NV2", "NV1", "SYS", "NV2", "SYS", "SYS"},
      {"NV1", "NV2", "X", "NV2", "SYS", "SYS", "NV1", "SYS"},
      {"NV2", "NV1", "NV2", "X", "SYS", "SYS", "SYS", "NV1"},
      {"NV2", "SYS", "SYS", "SYS", "X", "NV1", "NV1", "NV2"},
      {"SYS", "NV2", "SYS", "SYS", "NV1", "X", "NV2", "NV1"},
      {"SYS", "SYS", "NV1", "SYS", "NV1", "NV2", "X", "NV2"},
      {"SYS", "SYS", "SYS", "NV1", "NV2", "NV1", "NV2", "X"},
  };
  ScoreMatrix m(8, std::vector<int>(8, 0));
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      if (std::optional<int> k = NvLinks(labels[a][b])) {
        m[a][b] = *k * kPointsPerNvLink + PciePoints((a < 4) == (b < 4) ? "NODE" : "SYS");
      } else {
        m[a][b] = PciePoints(labels[a][b]);
      }
    }
  }
  return m;
}

TEST(LinkScore, PointsAsGoGpuallocator) {
  EXPECT_EQ(PciePoints("PIX"), 50);
  EXPECT_EQ(PciePoints("PXB"), 40);
  EXPECT_EQ(PciePoints("PHB"), 30);
  EXPECT_EQ(PciePoints("NODE"), 20);
  EXPECT_EQ(PciePoints("SYS"), 10);
  EXPECT_EQ(NvLinks("NV18"), 18);
  EXPECT_EQ(NvLinks("PIX"), std::nullopt);
  // NVLink outranks every PCIe path, a PCIe switch outranks the host bridge, and so on.
  EXPECT_GT(kPointsPerNvLink, PciePoints(NVML_TOPOLOGY_INTERNAL));
}

TEST(BestSet, MatchesBruteForceOnDgx1ForEverySize) {
  ScoreMatrix m = Dgx1();
  std::vector<size_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
  for (size_t size = 1; size <= 8; ++size) {
    auto [best, reference] = BruteForce(m, all, {}, size);
    std::vector<size_t> got = BestSet(m, all, {}, size);
    EXPECT_EQ(SetScore(m, got), best) << "size " << size;
    EXPECT_EQ(got, reference) << "size " << size;  // same tie-break: lexicographically first
  }
  // Four GPUs: one fully connected quad of the cube-mesh.
  EXPECT_THAT(BestSet(m, all, {}, 4), ElementsAre(0, 1, 2, 3));
}

TEST(BestSet, HonoursRequiredAndAvailable) {
  ScoreMatrix m = Dgx1();
  std::vector<size_t> available = {1, 2, 4, 5, 6, 7};
  for (size_t size = 1; size <= available.size(); ++size) {
    std::vector<size_t> required = {5};
    auto [best, reference] = BruteForce(m, available, required, size);
    std::vector<size_t> got = BestSet(m, available, required, size);
    EXPECT_EQ(got, reference) << "size " << size;
    EXPECT_NE(std::find(got.begin(), got.end(), 5u), got.end());
  }
}

TEST(BestSet, RandomMatricesUpTo16Gpus) {
  std::mt19937 random(7);
  for (int round = 0; round < 60; ++round) {
    size_t n = 2 + random() % 15;  // 2..16
    ScoreMatrix m(n, std::vector<int>(n, 0));
    for (size_t a = 0; a < n; ++a)
      for (size_t b = a + 1; b < n; ++b)
        m[a][b] = m[b][a] = (random() % 6) * 10 + (random() % 3) * 100;
    std::vector<size_t> all(n);
    for (size_t i = 0; i < n; ++i) all[i] = i;
    size_t size = 1 + random() % n;
    std::vector<size_t> required;
    if (size > 1 && random() % 2) required.push_back(random() % n);
    auto [best, reference] = BruteForce(m, all, required, size);
    std::vector<size_t> got = BestSet(m, all, required, size);
    EXPECT_EQ(got, reference) << "n " << n << " size " << size;
  }
}

// 32 GPUs, half of them asked for: C(32,16) subsets, far beyond what the exact search may spend
// on the plugin's one gRPC thread. The search stops at its budget with a full, valid set.
TEST(BestSet, AHostileRequestStopsAtTheBudgetWithAFullSet) {
  std::mt19937 random(11);
  const size_t n = 32;
  ScoreMatrix m(n, std::vector<int>(n, 0));
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b) m[a][b] = m[b][a] = static_cast<int>(random() % 1000);
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;

  auto started = std::chrono::steady_clock::now();
  BestSetResult result = BestSetWithin(m, all, {3}, 16);
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_FALSE(result.exact);
  ASSERT_EQ(result.set.size(), 16u);
  EXPECT_TRUE(std::is_sorted(result.set.begin(), result.set.end()));
  EXPECT_EQ(std::adjacent_find(result.set.begin(), result.set.end()), result.set.end());
  EXPECT_TRUE(std::binary_search(result.set.begin(), result.set.end(), 3u));
  // Minutes without the budget; the default is meant to be tens of milliseconds.
  EXPECT_LT(took, std::chrono::seconds(5));

  // Even a budget too small to finish one descent reaches a full set.
  BestSetResult tiny = BestSetWithin(m, all, {}, 16, 1);
  EXPECT_FALSE(tiny.exact);
  EXPECT_EQ(tiny.set.size(), 16u);
}

TEST(BestSet, RealNodesAreSolvedExactlyWithinTheBudget) {
  ScoreMatrix m = Dgx1();
  std::vector<size_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
  for (size_t size = 1; size <= 8; ++size) EXPECT_TRUE(BestSetWithin(m, all, {}, size).exact);
}

Resource SharedResource(int gpus, int replicas) {
  Resource r;
  r.name = "nvidia.com/gpu";
  r.replicas = replicas;
  for (int g = 0; g < gpus; ++g) {
    for (int k = 0; k < replicas; ++k) {
      PluginDevice d;
      d.uuid = "GPU-" + std::to_string(g);
      d.id = d.uuid + "::" + std::to_string(k);
      d.gpu = g;
      d.replica = k;
      r.devices.push_back(d);
    }
  }
  return r;
}

std::vector<std::string> Ids(const Resource& r, const std::vector<size_t>& positions) {
  std::vector<std::string> ids;
  for (size_t p : positions) ids.push_back(r.devices[p].id);
  return ids;
}

TEST(ReplicaPolicy, DistributedSpreadsAndPackedFills) {
  Resource r = SharedResource(3, 4);
  std::vector<size_t> all(r.devices.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  EXPECT_THAT(Ids(r, PickShared(r, all, {}, 3, SharedAllocationPolicy::kDistributed)),
              ElementsAre("GPU-0::0", "GPU-1::0", "GPU-2::0"));
  EXPECT_THAT(Ids(r, PickShared(r, all, {}, 3, SharedAllocationPolicy::kPacked)),
              ElementsAre("GPU-0::0", "GPU-0::1", "GPU-0::2"));
  // GPU 0 has two replicas in use: distributed avoids it, packed goes back to it.
  std::vector<size_t> available;
  for (size_t i = 0; i < all.size(); ++i)
    if (i != 0 && i != 1) available.push_back(i);
  EXPECT_THAT(Ids(r, PickShared(r, available, {}, 2, SharedAllocationPolicy::kDistributed)),
              ElementsAre("GPU-1::0", "GPU-2::0"));
  EXPECT_THAT(Ids(r, PickShared(r, available, {}, 2, SharedAllocationPolicy::kPacked)),
              ElementsAre("GPU-0::2", "GPU-0::3"));
  // Required devices come first and count as picked.
  EXPECT_THAT(Ids(r, PickShared(r, all, {5}, 2, SharedAllocationPolicy::kDistributed)),
              ElementsAre("GPU-1::1", "GPU-0::0"));
}

}  // namespace
}  // namespace gpunode::plugin
