// The exporter's parts that need no NVML or kubelet: /proc cgroup parsing, the device manager
// checkpoint, the zombie rule, exposition formatting and --listen.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/attribution.h"
#include "metrics/cgroup.h"
#include "metrics/exposition.h"
#include "metrics/listen_address.h"
#include "metrics/render.h"

namespace gpunode::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kId = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

TEST(Cgroup, V2SystemdContainerd) {
  CgroupIdentity id = ParseProcCgroup(
      std::string("0::/kubepods.slice/kubepods-burstable.slice/"
                  "kubepods-burstable-pod0b5c1e3a_1111_4a2b_9c3d_aaaaaaaaaaaa.slice/"
                  "cri-containerd-") +
      kId + ".scope\n");
  EXPECT_EQ(id.pod_uid, "0b5c1e3a-1111-4a2b-9c3d-aaaaaaaaaaaa");
  EXPECT_EQ(id.container_id, kId);
}

TEST(Cgroup, V1CgroupfsDockerShim) {
  std::string path =
      std::string("/kubepods/besteffort/pod0b5c1e3a-2222-4a2b-9c3d-bbbbbbbbbbbb/") + kId;
  CgroupIdentity id = ParseProcCgroup("12:pids:" + path + "\n11:memory:" + path +
                                      "\n1:name=systemd:" + path + "\n0::/\n");
  EXPECT_EQ(id.pod_uid, "0b5c1e3a-2222-4a2b-9c3d-bbbbbbbbbbbb");
  EXPECT_EQ(id.container_id, kId);
}

TEST(Cgroup, GuaranteedPodCrio) {
  CgroupIdentity id = ParseProcCgroup(
      std::string(
          "0::/kubepods.slice/kubepods-pod0b5c1e3a_4444_4a2b_9c3d_dddddddddddd.slice/crio-") +
      kId + ".scope");
  EXPECT_EQ(id.pod_uid, "0b5c1e3a-4444-4a2b-9c3d-dddddddddddd");
  EXPECT_EQ(id.container_id, kId);
}

TEST(Cgroup, CrioConmonIsInThePodButNoContainer) {
  CgroupIdentity id = ParseProcCgroup(
      std::string("0::/kubepods.slice/kubepods-pod0b5c1e3a_4444_4a2b_9c3d_dddddddddddd.slice/"
                  "crio-conmon-") +
      kId + ".scope");
  EXPECT_EQ(id.pod_uid, "0b5c1e3a-4444-4a2b-9c3d-dddddddddddd");
  EXPECT_EQ(id.container_id, "");
}

TEST(Cgroup, DockerSystemdDriverGuaranteedPod) {
  CgroupIdentity id = ParseProcCgroup(
      std::string(
          "0::/kubepods.slice/kubepods-pod0b5c1e3a_5555_4a2b_9c3d_eeeeeeeeeeee.slice/docker-") +
      kId + ".scope/init.scope");
  EXPECT_EQ(id.pod_uid, "0b5c1e3a-5555-4a2b-9c3d-eeeeeeeeeeee");
  EXPECT_EQ(id.container_id, kId);
}

TEST(Cgroup, CgroupNamespaceRelativePathAndKindNesting) {
  CgroupIdentity id = ParseProcCgroup(
      std::string(
          "0::/../../kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
          "kubelet-kubepods-besteffort-pod0b5c1e3a_6666_4a2b_9c3d_ffffffffffff.slice/"
          "cri-containerd-") +
      kId + ".scope");
  EXPECT_EQ(id.pod_uid, "0b5c1e3a-6666-4a2b-9c3d-ffffffffffff");
  EXPECT_EQ(id.container_id, kId);
}

TEST(Cgroup, StaticPodUidIsAHash) {
  CgroupIdentity id = ParseProcCgroup(
      "0::/kubepods/burstable/pod6c2d9f0e8a3b4c5d6e7f8091a2b3c4d5/" + std::string(kId));
  EXPECT_EQ(id.pod_uid, "6c2d9f0e8a3b4c5d6e7f8091a2b3c4d5");
}

TEST(Cgroup, OutsideKubernetes) {
  CgroupIdentity id = ParseProcCgroup(std::string("0::/system.slice/docker-") + kId + ".scope\n");
  EXPECT_EQ(id.pod_uid, "");
  EXPECT_EQ(id.container_id, kId);
  id = ParseProcCgroup("0::/user.slice/user-1000.slice/session-3.scope\n");
  EXPECT_EQ(id.pod_uid, "");
  EXPECT_EQ(id.container_id, "");
}

TEST(Cgroup, PodSegmentOutsideKubepodsIsNotAPod) {
  EXPECT_EQ(ParseProcCgroup("0::/system.slice/pod0b5c1e3a-1111-4a2b-9c3d-aaaaaaaaaaaa/x").pod_uid,
            "");
}

TEST(Cgroup, GarbageYieldsNothing) {
  for (const char* text :
       {"", "\n\n", "no colons", "1:x", "0::/kubepods/podXYZ/abc", "0::/kubepods/pod/", "::::"}) {
    CgroupIdentity id = ParseProcCgroup(text);
    EXPECT_EQ(id.pod_uid, "") << text;
    EXPECT_EQ(id.container_id, "") << text;
  }
}

// ---- The zombie rule ----

class ZombieRule : public ::testing::Test {
 protected:
  Attribution Build(bool with_checkpoint) {
    std::vector<ListedDevices> listed = {
        {"team-a", "train-0", "trainer", {"GPU-0"}},
        {"team-c", "infer-2", "server", {"GPU-1::0"}},
        {"team-b", "notebook-1", "jupyter", {"GPU-1::1"}},
        {"team-d", "mig-job", "worker", {"MIG-7"}},
        {"team-e", "by-index", "main", {"5"}},
    };
    std::vector<host::CheckpointAllocation> checkpoint = {
        {"uid-a", "trainer", "nvidia.com/gpu", {"GPU-0"}},
        {"uid-c", "server", "nvidia.com/gpu", {"GPU-1::0"}},
        {"uid-b", "jupyter", "nvidia.com/gpu", {"GPU-1::1"}},
        // A pod that is gone but still in the checkpoint: it must not make anyone active.
        {"uid-dead", "batch", "nvidia.com/gpu", {"GPU-2"}},
    };
    return Attribution(listed,
                       with_checkpoint ? checkpoint : std::vector<host::CheckpointAllocation>{});
  }
  CgroupIdentity InPod(const std::string& uid) { return CgroupIdentity{uid, "c0ffee"}; }
};

TEST_F(ZombieRule, ProcessOfThePodHoldingTheGpuIsAttributed) {
  Attribution attribution = Build(true);
  ProcessVerdict v = ClassifyProcess(InPod("uid-a"), attribution.Of("GPU-0", 0));
  EXPECT_EQ(v.ownership, Ownership::kPod);
  ASSERT_NE(v.allocation, nullptr);
  EXPECT_EQ(v.allocation->pod, "train-0");
  EXPECT_EQ(v.allocation->replica, "");
}

TEST_F(ZombieRule, SharedGpuNamesTheReplicaOfTheProcessPod) {
  Attribution attribution = Build(true);
  EXPECT_EQ(attribution.Of("GPU-1", 1).size(), 2u);
  ProcessVerdict v = ClassifyProcess(InPod("uid-b"), attribution.Of("GPU-1", 1));
  ASSERT_EQ(v.ownership, Ownership::kPod);
  EXPECT_EQ(v.allocation->pod, "notebook-1");
  EXPECT_EQ(v.allocation->replica, "1");
}

TEST_F(ZombieRule, ProcessOfAnotherPodOnAnAllocatedGpuIsAZombie) {
  Attribution attribution = Build(true);
  ProcessVerdict v = ClassifyProcess(InPod("uid-dead"), attribution.Of("GPU-0", 0));
  EXPECT_EQ(v.ownership, Ownership::kOrphan);
  EXPECT_EQ(v.reason, "gpu_allocated_to_other_pod");
}

TEST_F(ZombieRule, ProcessOnAGpuNoActivePodHoldsIsAZombie) {
  Attribution attribution = Build(true);
  EXPECT_TRUE(attribution.Of("GPU-2", 2).empty()) << "the stale checkpoint entry gives no holder";
  ProcessVerdict v = ClassifyProcess(InPod("uid-dead"), attribution.Of("GPU-2", 2));
  EXPECT_EQ(v.ownership, Ownership::kOrphan);
  EXPECT_EQ(v.reason, "gpu_not_allocated");
}

TEST_F(ZombieRule, ProcessOutsideAnyPodIsAZombieEvenOnAnAllocatedGpu) {
  Attribution attribution = Build(true);
  ProcessVerdict v = ClassifyProcess(CgroupIdentity{"", "abc"}, attribution.Of("GPU-0", 0));
  EXPECT_EQ(v.ownership, Ownership::kOrphan);
  EXPECT_EQ(v.reason, "not_in_pod");
}

TEST_F(ZombieRule, NoProcEntryIsUndecided) {
  Attribution attribution = Build(true);
  EXPECT_EQ(ClassifyProcess(std::nullopt, attribution.Of("GPU-0", 0)).ownership,
            Ownership::kUnknown);
}

TEST_F(ZombieRule, WithoutTheCheckpointTheDeviceAloneAttributes) {
  Attribution attribution = Build(false);
  ProcessVerdict v = ClassifyProcess(InPod("uid-anything"), attribution.Of("GPU-0", 0));
  ASSERT_EQ(v.ownership, Ownership::kPod);
  EXPECT_EQ(v.allocation->pod, "train-0");
  // Shared between two pods: which one cannot be told, and nobody is accused.
  EXPECT_EQ(ClassifyProcess(InPod("uid-b"), attribution.Of("GPU-1", 1)).ownership,
            Ownership::kUnknown);
  EXPECT_EQ(ClassifyProcess(InPod("uid-b"), attribution.Of("GPU-2", 2)).reason,
            "gpu_not_allocated");
}

TEST_F(ZombieRule, MigDevicesByUuidAndGpusByIndexId) {
  Attribution attribution = Build(true);
  ASSERT_EQ(attribution.Of("MIG-7", std::nullopt).size(), 1u);
  EXPECT_EQ(attribution.Of("MIG-7", std::nullopt)[0]->pod, "mig-job");
  ASSERT_EQ(attribution.Of("GPU-5", 5).size(), 1u);
  EXPECT_EQ(attribution.Of("GPU-5", 5)[0]->pod, "by-index");
  EXPECT_TRUE(attribution.Of("GPU-6", 6).empty());
}

// ---- Exposition ----

TEST(Exposition, FormatsLikeDcgmExporter) {
  std::string out;
  ExpositionWriter writer(&out);
  std::string labels;
  AppendLabel("gpu", "0", &labels);
  AppendLabel("modelName", "A \"quoted\\\" name\nx", &labels);
  writer.Family("DCGM_FI_DEV_POWER_USAGE", MetricType::kGauge, "Power draw (in W).");
  writer.Sample("DCGM_FI_DEV_POWER_USAGE", labels, "", 30.982);
  writer.Sample("DCGM_FI_DEV_POWER_USAGE", labels, "pid=\"7\",", uint64_t{42});
  writer.Sample("plain", "", "", uint64_t{18446744073709551615u});
  EXPECT_EQ(out,
            "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
            "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
            "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",modelName=\"A \\\"quoted\\\\\\\" name\\nx\"} "
            "30.982000\n"
            "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",modelName=\"A \\\"quoted\\\\\\\" name\\nx\","
            "pid=\"7\"} 42\n"
            "plain 18446744073709551615\n");
}

TEST(Render, LabelsInDcgmOrderWithPodsMigAndLostGpus) {
  NodeReading node;
  node.hostname = "node-1";
  node.driver_version = "550.90.07";
  GpuReading shared;
  shared.index = 0;
  shared.uuid = "GPU-0";
  shared.name = "NVIDIA A10";
  shared.pci_bus_id = "00000000:17:00.0";
  shared.values[kGpuTemp] = 35;
  shared.values[kPowerUsage] = 16.4;
  shared.holders = {{"ns", "a", "c", "0"}, {"ns", "b", "c", "1"}};
  ProcessReading zombie;
  zombie.pid = 99;
  zombie.used_memory_bytes = 1024;
  zombie.ownership = Ownership::kOrphan;
  zombie.orphan_reason = "gpu_not_allocated";
  zombie.pod_uid = "uid-x";
  shared.processes.push_back(zombie);
  shared.orphan_processes = 1;
  shared.last_xid = 48;
  shared.xid_counts = {{48, 2}};
  GpuReading mig_gpu;
  mig_gpu.index = 1;
  mig_gpu.uuid = "GPU-1";
  mig_gpu.name = "NVIDIA A100";
  mig_gpu.mig_enabled = true;
  mig_gpu.values[kGpuTemp] = 40;
  MigReading mig;
  mig.uuid = "MIG-1";
  mig.profile = "1g.10gb";
  mig.gpu_instance_id = 7;
  mig.values[kFbUsed] = 13;
  mig.holders = {{"ns", "m", "w", ""}};
  mig_gpu.migs.push_back(mig);
  GpuReading lost;
  lost.index = 2;
  lost.lost = true;
  lost.uuid = "GPU-2";
  lost.values[kGpuTemp] = 99;  // never shown: a lost GPU reports nothing but its health
  node.gpus = {shared, mig_gpu, lost};

  std::string out;
  RenderExposition(node, &out);
  const std::string base0 =
      "gpu=\"0\",UUID=\"GPU-0\",pci_bus_id=\"00000000:17:00.0\",device=\"nvidia0\","
      "modelName=\"NVIDIA A10\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.90.07\"";
  EXPECT_THAT(out, HasSubstr("DCGM_FI_DEV_GPU_TEMP{" + base0 +
                             ",container=\"c\",namespace=\"ns\",pod=\"a\",vgpu=\"0\"} 35\n"));
  EXPECT_THAT(out, HasSubstr("DCGM_FI_DEV_GPU_TEMP{" + base0 +
                             ",container=\"c\",namespace=\"ns\",pod=\"b\",vgpu=\"1\"} 35\n"));
  EXPECT_THAT(out,
              HasSubstr("DCGM_FI_DEV_POWER_USAGE{" + base0 +
                        ",container=\"c\",namespace=\"ns\",pod=\"a\",vgpu=\"0\"} 16.400000\n"));
  // dcgm-exporter 4.x's XID labels sit among the pod's, sorted by name.
  EXPECT_THAT(out, HasSubstr("DCGM_FI_DEV_XID_ERRORS{" + base0 +
                             ",container=\"c\",err_code=\"48\",err_msg=\"Double Bit ECC Error\","
                             "namespace=\"ns\",pod=\"a\",vgpu=\"0\"} 48\n"));
  EXPECT_THAT(out, HasSubstr("gpunode_xid_errors_total{" + base0 + ",xid=\"48\"} 2\n"));
  EXPECT_THAT(out, HasSubstr("gpunode_gpu_process_used_memory_bytes{" + base0 +
                             ",pid=\"99\",orphan=\"true\",reason=\"gpu_not_allocated\","
                             "pod_uid=\"uid-x\"} 1024\n"));
  EXPECT_THAT(out, HasSubstr("gpunode_orphan_gpu_processes{" + base0 + "} 1\n"));
  EXPECT_THAT(out, HasSubstr("gpunode_gpu_health{" + base0 + "} 1\n"));
  // The MIG-enabled GPU's own series carry no pod; its MIG device's do, with GPU_I_*.
  EXPECT_THAT(out, HasSubstr("DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"GPU-1\",pci_bus_id=\"\","
                             "device=\"nvidia1\",modelName=\"NVIDIA A100\",Hostname=\"node-1\","
                             "DCGM_FI_DRIVER_VERSION=\"550.90.07\"} 40\n"));
  EXPECT_THAT(out,
              HasSubstr("DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-1\",pci_bus_id=\"\","
                        "device=\"nvidia1\",modelName=\"NVIDIA A100\",GPU_I_PROFILE=\"1g.10gb\","
                        "GPU_I_ID=\"7\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.90.07\","
                        "container=\"w\",namespace=\"ns\",pod=\"m\"} 13\n"));
  // The lost GPU: health 0 with its labels, nothing else.
  EXPECT_THAT(out, HasSubstr("gpunode_gpu_health{gpu=\"2\",UUID=\"GPU-2\""));
  EXPECT_THAT(out, HasSubstr("Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.90.07\"} 0\n"));
  EXPECT_THAT(out, Not(HasSubstr(" 99\n")));
  // No family without samples, and no orphan count where attribution was off.
  EXPECT_THAT(out, Not(HasSubstr("DCGM_FI_DEV_SM_CLOCK")));
  EXPECT_THAT(out, Not(HasSubstr("gpunode_orphan_gpu_processes{gpu=\"1\"")));
  EXPECT_THAT(out, Not(HasSubstr("gpunode_pod_resources_up")));
}

TEST(ListenAddress, AcceptsWhatDcgmExporterAccepts) {
  struct Case {
    const char* text;
    const char* host;
    int port;
  };
  for (const Case& c : {Case{":9400", "0.0.0.0", 9400}, Case{"127.0.0.1:0", "127.0.0.1", 0},
                        Case{"[::1]:9400", "::1", 9400}, Case{"localhost:80", "localhost", 80},
                        Case{"[::]:65535", "::", 65535}}) {
    absl::StatusOr<ListenAddress> address = ParseListenAddress(c.text);
    ASSERT_TRUE(address.ok()) << c.text << ": " << address.status();
    EXPECT_EQ(address->host, c.host);
    EXPECT_EQ(address->port, c.port);
  }
}

TEST(ListenAddress, RefusesWithTheFlagAndTheFix) {
  for (const char* text :
       {"9400", ":", ":http", ":-1", ":65536", "::1:9400", "[::1:9400", "a b:1", ":94x0", ""}) {
    absl::StatusOr<ListenAddress> address = ParseListenAddress(text);
    ASSERT_FALSE(address.ok()) << text;
    EXPECT_THAT(std::string(address.status().message()), HasSubstr("--listen"));
    EXPECT_THAT(std::string(address.status().message()), HasSubstr("give [HOST]:PORT"));
  }
}

}  // namespace
}  // namespace gpunode::metrics
