// `gpunode cluster restore` and the operator's own GPU count label, through the real binary:
// restore refuses until every physical GPU is back and healthy (live and on a snapshot alike),
// `--force` overrides and says so, and only what `cluster drain` did is undone.
#include <map>
#include <string>
#include <vector>

#include "cli_support.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "nlohmann/json.hpp"
#include "temp_dir.h"

namespace gpunode::testing {
namespace {

using json = nlohmann::json;

struct NodeSpec {
  std::string name;
  int capacity = 8;
  int allocatable = 8;
  json labels = json::object();
  json annotations = json::object();
  bool unschedulable = false;
};

json NodeFromSpec(const NodeSpec& n) {
  json node = {{"kind", "Node"},
               {"apiVersion", "v1"},
               {"metadata", {{"name", n.name}, {"labels", n.labels}}},
               {"spec", json::object()},
               {"status",
                {{"capacity", {{"nvidia.com/gpu", std::to_string(n.capacity)}}},
                 {"allocatable", {{"nvidia.com/gpu", std::to_string(n.allocatable)}}},
                 {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  if (!n.annotations.empty()) node["metadata"]["annotations"] = n.annotations;
  if (n.unschedulable) node["spec"]["unschedulable"] = true;
  return node;
}

const json kDrained = {{"nvidia.com/gpu.count", "8"}, {"nvidia.com/gpu.state", "draining"}};
const json kDrainAnnotations = {{"gpunode.io/drain-started-at", "2026-01-05T10:00:00Z"},
                                {"gpunode.io/drain-cordoned", "true"}};

class RestoreCliTest : public LiveApiServerTest {
 protected:
  // The node as a one-item List file, for the snapshot mode.
  std::string Snapshot(const json& node) {
    json list = {{"kind", "List"}, {"apiVersion", "v1"}, {"items", {node}}};
    return dir_->Write("snapshot-" + std::to_string(server_->port()) + ".json", list.dump());
  }
};

TEST_F(RestoreCliTest, RefusesUnhealthyGpusLiveAndOnASnapshotUntilForced) {
  json node = NodeFromSpec({"gpu-xid", 8, 6, kDrained, kDrainAnnotations, true});
  server_->AddObject(node);
  const std::string why =
      "refusing to restore: node gpu-xid has 6 healthy nvidia.com/gpu (allocatable; capacity 8) "
      "of 8 (nvidia.com/gpu.count=8); the device plugin marks GPUs unhealthy after XID errors";

  ProcessResult live = Live({"cluster", "restore", "gpu-xid"});
  EXPECT_EQ(live.exit_code, 1) << live.out << live.err;
  EXPECT_NE(live.err.find(why), std::string::npos) << live.err;
  EXPECT_NE(live.err.find("(--force restores it anyway)"), std::string::npos) << live.err;
  EXPECT_EQ(server_->CountRequests("PATCH", "/"), 0);

  ProcessResult offline =
      Gpunode({"cluster", "restore", "gpu-xid", "--dry-run", "-f", Snapshot(node)});
  EXPECT_EQ(offline.exit_code, 1) << offline.out;
  EXPECT_NE(offline.err.find(why), std::string::npos) << offline.err;

  ProcessResult forced = Live({"cluster", "restore", "gpu-xid", "--force"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.out.find("restoring anyway (--force): node gpu-xid has 6 healthy"),
            std::string::npos)
      << forced.out;
  EXPECT_NE(forced.out.find("node gpu-xid restored: nvidia.com/gpu.state removed, uncordoned "
                            "(forced)"),
            std::string::npos)
      << forced.out;
  json after = *server_->Node("gpu-xid");
  EXPECT_FALSE(after["metadata"]["labels"].contains("nvidia.com/gpu.state"));
  EXPECT_FALSE(after["metadata"].contains("annotations") &&
               after["metadata"]["annotations"].contains("gpunode.io/drain-cordoned"));
  EXPECT_FALSE(after["spec"].contains("unschedulable"));
}

TEST_F(RestoreCliTest, HealthyNodeOnASnapshotSaysWhatItWouldUndo) {
  json node = NodeFromSpec({"gpu-ok", 8, 8, kDrained, kDrainAnnotations, true});
  ProcessResult r = Gpunode({"cluster", "restore", "gpu-ok", "--dry-run", "-f", Snapshot(node)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("node gpu-ok has 8 healthy nvidia.com/gpu (allocatable; capacity 8) of 8 "
                       "(nvidia.com/gpu.count=8)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("dry run: would remove nvidia.com/gpu.state and the drain's annotations, "
                       "and uncordon gpu-ok"),
            std::string::npos)
      << r.out;
}

TEST_F(RestoreCliTest, LeavesACordonSetByAPersonInPlace) {
  // Cordoned by hand, never drained: nothing of gpunode's to undo.
  server_->AddObject(NodeFromSpec({"gpu-hand", 8, 8, {{"nvidia.com/gpu.count", "8"}}, {}, true}));
  ProcessResult r = Live({"cluster", "restore", "gpu-hand"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("node gpu-hand stays cordoned: `gpunode cluster drain` did not cordon it"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("was not drained by `gpunode cluster drain`"), std::string::npos) << r.out;
  EXPECT_EQ(server_->CountRequests("PATCH", "/"), 0);
  EXPECT_TRUE((*server_->Node("gpu-hand"))["spec"]["unschedulable"].get<bool>());

  // Cordoned by hand, then drained by gpunode with --cordon: the drain records no cordon of its
  // own, so restore removes the label and leaves the cordon.
  server_->AddObject(NodeFromSpec({"gpu-both", 8, 8, {{"nvidia.com/gpu.count", "8"}}, {}, true}));
  ProcessResult drain = Live({"cluster", "drain", "gpu-both", "--cordon"});
  ASSERT_EQ(drain.exit_code, 0) << drain.out << drain.err;
  json drained = *server_->Node("gpu-both");
  EXPECT_EQ(drained["metadata"]["labels"]["nvidia.com/gpu.state"], "draining");
  EXPECT_FALSE(drained["metadata"]["annotations"].contains("gpunode.io/drain-cordoned"));
  ProcessResult restored = Live({"cluster", "restore", "gpu-both"});
  EXPECT_EQ(restored.exit_code, 0) << restored.err;
  EXPECT_NE(restored.out.find("node gpu-both stays cordoned"), std::string::npos) << restored.out;
  json after = *server_->Node("gpu-both");
  EXPECT_FALSE(after["metadata"]["labels"].contains("nvidia.com/gpu.state"));
  EXPECT_TRUE(after["spec"]["unschedulable"].get<bool>());

  // Drained with --cordon on a schedulable node: restore uncordons it.
  server_->AddObject(NodeFromSpec({"gpu-mine", 8, 8, {{"nvidia.com/gpu.count", "8"}}}));
  ASSERT_EQ(Live({"cluster", "drain", "gpu-mine", "--cordon"}).exit_code, 0);
  EXPECT_EQ((*server_->Node("gpu-mine"))["metadata"]["annotations"]["gpunode.io/drain-cordoned"],
            "true");
  ProcessResult mine = Live({"cluster", "restore", "gpu-mine"});
  EXPECT_EQ(mine.exit_code, 0) << mine.err;
  EXPECT_NE(mine.out.find("node gpu-mine restored: nvidia.com/gpu.state removed, uncordoned\n"),
            std::string::npos)
      << mine.out;
  EXPECT_FALSE((*server_->Node("gpu-mine"))["spec"].contains("unschedulable"));
}

TEST_F(RestoreCliTest, TheOperatorsCountLabelWinsAndDisagreementIsAFinding) {
  // GFD says 7 (a GPU fell off the bus before it last ran), the operator's label says 8.
  json disagree = NodeFromSpec(
      {"gpu-split",
       8,
       8,
       {{"nvidia.com/gpu.count", "7"}, {"gpu.count", "8"}, {"nvidia.com/gpu.state", "draining"}},
       kDrainAnnotations,
       true});
  server_->AddObject(disagree);
  // Only the operator's label, under a prefix: 4 GPUs, and 4 advertised.
  json own = NodeFromSpec({"gpu-own", 4, 4, {{"example.com/gpu.count", "4"}}});
  server_->AddObject(own);

  ProcessResult audit = Live({"cluster", "audit", "-o", "json"});
  EXPECT_EQ(audit.exit_code, 1) << audit.err;
  json report = json::parse(audit.out);
  std::vector<std::string> ids;
  for (const json& f : report["findings"]) {
    if (f["object"] == "node/gpu-split" && f["severity"] == "error") ids.push_back(f["id"]);
  }
  EXPECT_EQ(ids, std::vector<std::string>{"gpu-count-labels-disagree"}) << audit.out;
  for (const json& f : report["findings"]) {
    if (f["id"] == "gpu-count-labels-disagree") {
      EXPECT_EQ(f["message"],
                "node gpu-split: the GPU count labels disagree: gpu.count=8, "
                "nvidia.com/gpu.count=7");
    }
  }
  // gpu-own is a GPU node only through the prefixed label; its count is read with the prefix.
  ProcessResult prefixed =
      Live({"cluster", "audit", "-o", "json", "--stable-label-prefix", "example.com/"});
  json nodes = json::parse(prefixed.out)["nodes"];
  bool seen = false;
  for (const json& n : nodes) {
    if (n["name"] == "gpu-own") {
      seen = true;
      EXPECT_EQ(n["gpu_count"], 4);
    }
  }
  EXPECT_TRUE(seen) << prefixed.out;

  ProcessResult refused = Live({"cluster", "restore", "gpu-split"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("refusing to restore: node gpu-split: the GPU count labels disagree: "
                             "gpu.count=8, nvidia.com/gpu.count=7"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(server_->CountRequests("PATCH", "/"), 0);

  // A custom key without prefix: --count-label.
  server_->AddObject(NodeFromSpec({"gpu-custom",
                                   2,
                                   2,
                                   {{"hw/gpus", "2"}, {"nvidia.com/gpu.count", "2"}},
                                   kDrainAnnotations,
                                   true}));
  ProcessResult custom = Live({"cluster", "restore", "gpu-custom", "--count-label", "hw/gpus"});
  EXPECT_EQ(custom.exit_code, 0) << custom.err;
  EXPECT_NE(custom.out.find("of 2 (hw/gpus=2)"), std::string::npos) << custom.out;
}

// A node short of a GPU, as `gpunode labels --stable-labels` labels it: gpu.count keeps the lost
// GPU, GFD's count does not, and gpu.missing names it by PCI address. restore refuses and names
// it, live and on a snapshot; audit names it where it reports the short count.
TEST_F(RestoreCliTest, ANodeShortOfAGpuIsNamedByPciAddress) {
  // XID 79: the device plugin marked the GPU unhealthy.
  json lost = NodeFromSpec({"gpu-lost",
                            8,
                            7,
                            {{"gpu.count", "8"},
                             {"nvidia.com/gpu.count", "7"},
                             {"gpu.missing", "b3-00.0"},
                             {"nvidia.com/gpu.state", "draining"}},
                            kDrainAnnotations,
                            true});
  // After a reboot the driver does not enumerate it at all; the labeller read no PCI bus.
  json gone = NodeFromSpec({"gpu-gone",
                            7,
                            7,
                            {{"gpu.count", "8"},
                             {"nvidia.com/gpu.count", "7"},
                             {"gpu.missing", "1-unknown"},
                             {"nvidia.com/gpu.state", "draining"}},
                            kDrainAnnotations,
                            true});
  server_->AddObject(lost);
  server_->AddObject(gone);
  const std::string lost_why =
      "refusing to restore: node gpu-lost has 7 healthy nvidia.com/gpu (allocatable; capacity 8) "
      "of 8 (gpu.count=8); missing GPU: 0000:b3:00.0 (gpu.missing=b3-00.0): the driver does not "
      "see it";
  ProcessResult live = Live({"cluster", "restore", "gpu-lost"});
  EXPECT_EQ(live.exit_code, 1) << live.out << live.err;
  EXPECT_NE(live.err.find(lost_why), std::string::npos) << live.err;
  EXPECT_EQ(server_->CountRequests("PATCH", "/"), 0);

  ProcessResult offline =
      Gpunode({"cluster", "restore", "gpu-lost", "--dry-run", "-f", Snapshot(lost)});
  EXPECT_EQ(offline.exit_code, 1) << offline.out;
  EXPECT_NE(offline.err.find(lost_why), std::string::npos) << offline.err;

  ProcessResult unknown = Live({"cluster", "restore", "gpu-gone"});
  EXPECT_EQ(unknown.exit_code, 1) << unknown.out << unknown.err;
  EXPECT_NE(unknown.err.find("node gpu-gone has 7 healthy nvidia.com/gpu (allocatable; capacity "
                             "7) of 8 (gpu.count=8); missing GPU: 1 at an unknown PCI address "
                             "(gpu.missing=1-unknown)"),
            std::string::npos)
      << unknown.err;
  EXPECT_EQ(server_->CountRequests("PATCH", "/"), 0);

  // audit: the two counts are explained by gpu.missing, not a disagreement; the findings that
  // report the short count name the GPU, and so does each node's JSON.
  json list = {{"kind", "List"}, {"apiVersion", "v1"}, {"items", {lost, gone}}};
  std::string snapshot =
      dir_->Write("short-" + std::to_string(server_->port()) + ".json", list.dump());
  ProcessResult audit = Gpunode({"cluster", "audit", "-f", snapshot, "-o", "json"});
  EXPECT_EQ(audit.exit_code, 1) << audit.err;
  json report = json::parse(audit.out);
  std::map<std::string, std::string> messages;  // "id node" -> message
  for (const json& f : report["findings"]) {
    messages[f["id"].get<std::string>() + " " + f["object"].get<std::string>()] = f["message"];
  }
  EXPECT_FALSE(messages.contains("gpu-count-labels-disagree node/gpu-lost")) << audit.out;
  EXPECT_FALSE(messages.contains("gpu-count-labels-disagree node/gpu-gone")) << audit.out;
  EXPECT_EQ(messages["gpu-unhealthy node/gpu-lost"],
            "node gpu-lost: 1 of 8 nvidia.com/gpu are unhealthy (capacity 8, allocatable 7); "
            "missing GPU: 0000:b3:00.0 (gpu.missing=b3-00.0)");
  EXPECT_EQ(messages["gpu-count-mismatch node/gpu-gone"],
            "node gpu-gone advertises 7 nvidia.com/gpu but should advertise 8 (gpu.count=8); "
            "missing GPU: 1 at an unknown PCI address (gpu.missing=1-unknown)");
  for (const json& n : report["nodes"]) {
    if (n["name"] == "gpu-lost") {
      EXPECT_EQ(n["missing_gpus"], json({"0000:b3:00.0"}));
      EXPECT_EQ(n["missing_gpus_unnamed"], 0);
    } else {
      EXPECT_EQ(n["missing_gpus"], json::array());
      EXPECT_EQ(n["missing_gpus_unnamed"], 1);
    }
  }
  ProcessResult table = Gpunode({"cluster", "audit", "-f", snapshot});
  EXPECT_NE(table.out.find("missing GPU: 0000:b3:00.0 (gpu.missing=b3-00.0)"), std::string::npos)
      << table.out;
}

}  // namespace
}  // namespace gpunode::testing
