// Every command in README.md and docs/*.md, run as the doc writes it: the fenced ```sh, ```bash
// and ```console blocks are read when the test runs, each block becomes one test that runs its
// commands in order in one shell (so `export` and files carry from line to line), with the real
// binary first on PATH as `gpunode`. What is substituted is what docs/TESTING.md ("The examples
// in the docs") says: the simulated dgx-h100 node, absolute paths under a temporary root, the
// repository's fixtures for the files the commands name, and an API server double for the
// cluster. A command no test knows how to run fails the suite until it runs or is listed, with
// its reason, in kNotRun.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "harness/gpu_cluster_objects.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"

namespace gpunode {
namespace {

namespace fs = std::filesystem;
using testing::DevicePluginDaemonSet;
using testing::DevicePluginPod;
using testing::GpuNode;
using testing::kDevicePluginNamespace;
using testing::kDevicePluginSet;
using testing::SmokeDoctorReport;
using json = nlohmann::json;

const fs::path kSource = build_paths::kSourceDir;

// Commands the test does not run, each with why. Keep it short: a command that can run with the
// substitutions below belongs in the test, not here.
struct NotRun {
  std::string command;  // as extracted: continuations joined, the trailing comment dropped
  std::string reason;
};
const std::vector<NotRun> kNotRun = {
    {"bash scripts/demo.sh", "installs packages and builds the tree: minutes, and root"},
    {"bash scripts/test.sh", "is the whole CI, which runs this test"},
    {"bash scripts/install-deps.sh", "installs Debian packages: root and the network"},
    {"bash scripts/build.sh release", "builds the tree this test is part of"},
    {"bash scripts/build.sh dist", "builds the shipped binary: minutes"},
    {"build-dist/gpunode --sim dgx-h100 inventory",
     "needs the dist build, which ctest does not make"},
    {"ctest --test-dir build --output-on-failure", "runs every test, this one included"},
    {"bash scripts/run-fuzzers.sh build-asan 60",
     "fuzzes for minutes in a build ctest does not make; scripts/test.sh runs every fuzzer"},
    {"bash scripts/build-k8s.sh", "builds Kubernetes from Go modules: minutes on a cold cache"},
    {"bash scripts/build-k8s.sh --print-dir", "names the cache of the line above"},
    {"bash scripts/local-cluster.sh up /tmp/gpunode-k8s",
     "starts the real control plane: tests/k8s runs the same script on a temporary directory"},
    {"export KUBECONFIG=/tmp/gpunode-k8s/admin.kubeconfig", "names the cluster of the line above"},
    {"bash scripts/local-cluster.sh token /tmp/gpunode-k8s gpunode-system gpunode-cluster",
     "needs the cluster above; tests/k8s makes ServiceAccount kubeconfigs with it"},
    {"bash scripts/local-cluster.sh down /tmp/gpunode-k8s", "stops the cluster above"},
    {"bash scripts/local-cluster.sh node /tmp/gpunode-k8s",
     "adds the real kubelet to the cluster above: tests/k8s/real_kubelet_test runs it"},
    {"gpunode --log-level info --sim dgx-h100 device-plugin --kubelet-dir "
     "/tmp/gpunode-k8s/node/kubelet/device-plugins",
     "a daemon for the node above; tests/k8s/real_kubelet_test runs it"},
    {"ctest --test-dir build -L real-cluster --output-on-failure",
     "runs the real-cluster suites, which scripts/test.sh runs"},
    {"TSAN_OPTIONS=\"halt_on_error=1 second_deadlock_stack=1 "
     "suppressions=$PWD/scripts/tsan.supp\" GPUNODE_TEST_TIME_SCALE=10 ctest --test-dir "
     "build-tsan --output-on-failure -L threads",
     "runs the TSan build's suites: minutes, and a build ctest does not make"},
    {"gpunode runtime status --socket /run/containerd/containerd.sock",
     "needs a running containerd; tests/runtime starts a real one for this"},
    {"kubectl label node gpu-node-3 nvidia.com/device-plugin.config=time-slicing-4 --overwrite",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"kubectl label node gpu-node-3 nvidia.com/mig.config=all-balanced --overwrite",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"kubectl get node gpu-node-3 -L nvidia.com/mig.config.state",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"kubectl label namespace ci gpunode.io/gpu-job-defaults=enabled",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"kubectl apply -k deploy/webhook",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"kubectl apply -f deploy/webhook/cert-manager.yaml",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"kubectl get nodes,pods -A -o json > snapshot.json",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"kubectl get nodes,pods,jobs,cronjobs,events -A -o json > snapshot.json",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"kubectl get nodes,pods,pdb -A -o json > snapshot.json",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"kubectl get nodes,pods -A -o json | gpunode cluster audit -f -",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"helm install gpunode deploy/helm/gpunode -n gpunode-system --create-namespace",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"helm upgrade gpunode deploy/helm/gpunode -n gpunode-system --reuse-values --set "
     "exporter.enabled=true",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"kubectl get daemonsets -n gpunode-system",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"kubectl apply -k deploy/labels",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"kubectl apply -k deploy/device-plugin/base",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"kubectl get nodes -L nvidia.com/gpu.present,nvidia.com/gpu.product,accelerator",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"helm uninstall gpunode -n gpunode-system",
     "runs against the real cluster in tests/k8s/real_cluster_test"},
    {"bash scripts/build-helm.sh",
     "builds helm from Go modules: a minute and a half on a cold cache"},
    {"bash scripts/build-kube-state-metrics.sh",
     "builds kube-state-metrics from Go modules: two minutes on a cold cache"},
    {"bash scripts/build-nvidia-tools.sh",
     "builds NVIDIA's device plugin, GFD and nvidia-ctk from Go modules: minutes on a cold cache"},
    {"ctest --test-dir build -L peers --output-on-failure",
     "runs the side-by-side suites, which scripts/test.sh runs"},
    {"kubectl exec -it my-training-pod -- gpunode doctor --in-container --cuda 12.4",
     "runs against the real node in tests/k8s/real_kubelet_test"},
    {"MPS_ROOT=/run/nvidia/mps gpunode mps-control-daemon --config-file config.yaml",
     "runs the driver's nvidia-cuda-mps-control, installed on a GPU node only; tests/plugin's "
     "mps_test runs it from Debian's package extracted into a driver root"},
    {"gpunode cluster audit --slow-pull 60s --max-gpu-pod-age 6h --age-namespace ci --prometheus "
     "http://prometheus:9090 --idle-util 5 --idle-for 30m",
     "needs a Prometheus at http://prometheus:9090; tests/cluster serves one for --prometheus"},
    {"ln -s /path/to/build/libgpunode-sim.so /tmp/sim/libnvidia-ml.so.1",
     "/path/to/build and some-nvml-program stand for the reader's own; tests/sim loads the "
     "simulator as libnvidia-ml.so.1"},
    {"GPUNODE_SIM=dgx1-v100 LD_LIBRARY_PATH=/tmp/sim some-nvml-program",
     "some-nvml-program stands for the reader's own NVML program"},
    {"for b in OLD/build-dist/gpunode build/gpunode build-dist/gpunode; do\n"
     "build/bench/plugin/plugin_process_bench \"$PWD/$b\"\n"
     "bench/metrics/measure_exporter.sh \"$b\" dgx-h100 100000\ndone",
     "a measurement: minutes, and an older build in OLD"},
    {"build/bench/metrics/exporter_bench", "a measurement: minutes"},
    {"build/bench/metrics/exporter_bench --benchmark_filter='BM_(GpmSample|Sample|Render|Scrape)'",
     "a measurement: minutes"},
    {"bench/metrics/measure_exporter.sh build/gpunode dgx-h100 100000", "a measurement: minutes"},
    {"bench/metrics/measure_exporter.sh build/gpunode tests/fixtures/metrics/sim-64.yaml 10000",
     "a measurement: minutes"},
};

// What a command that does not exit 0, or whose output is worth a look, is expected to do.
struct Expectation {
  std::string command;
  int exit_code;
  std::string output;  // in stdout or stderr; "" checks nothing
};
const std::vector<Expectation> kExpectations = {
    {"gpunode inventory", 0, "NVIDIA H100 80GB HBM3"},
    {"gpunode inventory -o json", 0, "\"driver_version\""},
    {"gpunode --sim dgx1-v100 inventory", 0, "Tesla V100-SXM2"},
    {"gpunode --sim capture.xml inventory", 0, "NVIDIA A100"},
    {"gpunode --version", 0, "libnvidia-ml.so.1"},
    {"gpunode runtime configure --runtime containerd --dry-run", 0, "99-nvidia.toml"},
    // The fixture node runs no containerd, so its runtime checks fail.
    {"gpunode doctor", 1, "runtime.containerd-version"},
    {"gpunode doctor --cuda 12.4 -o json", 1, "\"runtime.containerd-version\""},
    {"gpunode --sim dgx-h100 --host-root tests/fixtures/doctor/healthy doctor", 1,
     "runtime.containerd-version"},
    {"gpunode --sim dgx-h100 --host-root node doctor --cuda 13.0", 1, "driver.cuda-compat"},
    {"NVIDIA_VISIBLE_DEVICES=2,5 CUDA_VERSION=12.4.1 gpunode --sim pod-2-of-8.yaml --host-root "
     "./pod-tree doctor --in-container",
     0, "container.visible-devices"},
    {"gpunode device-plugin --check-config config.yaml", 0, ""},
    {"gpunode cdi validate /var/run/cdi/nvidia.yaml", 0, ""},
    {"gpunode cdi generate --format json", 0, "\"cdiVersion\""},
    {"gpunode exporter --once", 0, "DCGM_FI_DEV_GPU_UTIL"},
    {"gpunode --sim dgx-h100 exporter --once", 0, "DCGM_FI_DEV_GPU_UTIL"},
    {"gpunode labels --oneshot -o -", 0, "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"},
    {"gpunode --sim a100-mig labels --oneshot -o - --mig-strategy mixed", 0, "nvidia.com/mig"},
    // The dgx-h100 node has MIG off, and a process on GPU 7.
    {"gpunode mig profiles", 0, "MIG disabled; NVML lists profiles only while MIG is on"},
    {"gpunode mig apply -f config.yaml --config all-balanced --dry-run", 0, "enable MIG mode"},
    {"gpunode mig apply -f config.yaml --config all-balanced", 1, "is used by pid"},
    {"gpunode mig assert -f config.yaml --config all-balanced", 1,
     "MIG mode is disabled, wanted enabled"},
    {"gpunode --sim a100-mig mig apply -f config.yaml --config all-1g.10gb", 1,
     "GPU 1 (NVIDIA A100-SXM4-80GB) is used by pid 41237"},
    {"gpunode --sim a100-mig inventory", 0, "1g.10gb"},
    {"gpunode cluster audit -f zombie-pods.json", 1, ""},
    {"gpunode cluster drain gpu-a --dry-run -f drain.json", 1, ""},  // a pod refused
    {"gpunode cluster why-pending finetune-0 -n ml", 1, ""},
    {"gpunode cluster restore gpu-xid", 1, ""},
    {"gpunode cluster verify gpu-a gpu-b -n gpunode-system", 1, ""},
    {"gpunode cluster audit -f snapshot.json -o json", 0, "\"gpu_nodes\""},
    {"gpunode cluster why-pending train-0 -n ml", 0, "fits-now"},
    {"gpunode cluster upgrade --driver-version 550.90.07 --pools training,inference "
     "--max-unavailable 25% --dry-run",
     0, "training (1 of 2 node(s) to upgrade, 1 at a time, then a 24h soak)"},
    {"gpunode cluster upgrade --driver-version 550.90.07 --pools training,inference "
     "--max-unavailable 25% --dry-run -f pools.json",
     0, "training (1 of 2 node(s) to upgrade, 1 at a time, then a 24h soak)"},
    {"gpunode cluster verify gpu-a gpu-b --dry-run -f snapshot.json", 0,
     "dry run: the smoke pod was not run"},
};

// Commands that run until stopped: each must still run a second after it starts (a bad flag or
// config ends it at once), then stop on SIGTERM with exit 0. Nothing they print marks the moment
// they are up, so the second is a bound on how fast a refusal comes, not a wait for an event.
const std::set<std::string> kDaemons = {
    "gpunode --sim dgx-h100 device-plugin --kubelet-dir /tmp/dp",
    "gpunode exporter --listen :9400",
    "gpunode exporter",
    "gpunode exporter --listen 127.0.0.1:9400 --interval 5s",
    "gpunode --host-root /host exporter",
    "gpunode webhook --tls-cert tls.crt --tls-key tls.key",
    "gpunode webhook --tls-cert tls.crt --tls-key tls.key --default-active-deadline 24h "
    "--default-ttl 1h",
    "NODE_NAME=gpu-node-3 gpunode mig manager -f config.yaml",
    "gpunode device-plugin --config-file /etc/nvidia-device-plugin/config.yaml",
    "NODE_NAME=gpu-node-3 gpunode device-plugin --config-file /config",
    "gpunode labels",
    "gpunode labels --config-file /config/config.yaml --mig-strategy mixed --stable-labels",
};

// Commands that exit 3 with one line where the machine lacks what they need (root, containerd):
// there the block is skipped with that line, since what follows them builds on what they start.
const std::set<std::string> kNeedsTheMachine = {
    "bash scripts/doctor-node.sh up node",
};

// Files the commands name, laid down before a block runs: a relative path in the working
// directory, an absolute one under the temporary root. Each is laid for a block that holds its
// path, or `when` where one name means different files or a command reads a path it does not
// name.
struct Fixture {
  std::string path;
  std::string source;  // relative to the source tree; a directory is copied whole, "" makes one
  std::string when = {};
};
const std::vector<Fixture> kFixtures = {
    {"capture.xml", "tests/fixtures/nvidia-smi-xml/a100-sxm4-mig.xml"},
    {"node-capture.xml", "tests/fixtures/nvidia-smi-xml/a100-sxm4-mig.xml"},
    {"topo.txt", "tests/fixtures/docs/dgx-h100-topo.txt", "dgx-h100 --sim-topology"},
    {"topo.txt", "tests/fixtures/docs/a100-topo.txt", "node-capture.xml"},
    {"my-node.yaml", "tests/fixtures/profiles/two-gpus-faults.yaml"},
    {"snapshot.json", "tests/fixtures/cluster/healthy.json"},
    {"zombie-pods.json", "tests/fixtures/cluster/zombie-pods.json"},
    {"drain.json", "tests/fixtures/cluster/drain.json"},
    {"pools.json", "tests/fixtures/cluster/upgrade-pools.json"},
    {"config.yaml", "tests/fixtures/plugin/time-slicing-4.yaml", "device-plugin --check-config"},
    {"config.yaml", "tests/fixtures/docs/mps.yaml", "mps-control-daemon"},
    {"config.yaml", "tests/fixtures/mig/mig-parted-config-default.yaml", "mig apply"},
    {"/etc/nvidia-device-plugin/config.yaml", "tests/fixtures/plugin/time-slicing-4.yaml"},
    {"/config/config.yaml", "tests/fixtures/plugin/time-slicing-4.yaml"},
    {"/config/config.yaml", "tests/fixtures/plugin/time-slicing-4.yaml", "--config-file /config"},
    {"/etc/containerd/config.toml", "tests/fixtures/containerd/debian-bookworm.toml", "runtime"},
    // The repository's own fixtures, for a command that names them as it runs from a clone.
    {"tests/fixtures", "tests/fixtures", "tests/fixtures/"},
    {"/", "tests/fixtures/doctor/healthy", "doctor"},
    {"/host", "tests/fixtures/doctor/healthy"},
    {"pod-2-of-8.yaml", "tests/fixtures/doctor/profiles/pod-2-of-8.yaml"},
    {"pod-tree", "tests/fixtures/doctor/pod"},
    {"pod-tree", "tests/fixtures/docs/pod-dev"},  // the device nodes the runtime injects
    {"/var/lib/node_exporter/textfile", ""},
    // NFD's local source directory, which NFD's worker creates on a node.
    {"/etc/kubernetes/node-feature-discovery/features.d", "", "gpunode labels"},
    {"/run/nvidia/driver", "tests/fixtures/doctor/pod", "cdi generate"},
    {"/srv/driver", "tests/fixtures/doctor/pod", "cdi generate"},
    {"/", "tests/fixtures/doctor/pod", "cdi generate"},
    {"/etc/cdi/nvidia.yaml", "tests/fixtures/docs/cdi-spec.yaml"},
    // The script and the trees it copies, where it finds them from its own path.
    {"scripts/doctor-node.sh", "scripts/doctor-node.sh"},
    {"tests/fixtures/doctor", "tests/fixtures/doctor", "scripts/doctor-node.sh"},
};

// Options a command leaves at the node's own paths, given explicitly so that it reads and writes
// the temporary root instead: `flag` is added after `command` when the line has neither `flag`
// nor one of its `aliases`, nor one of `unless` (a mode that does not use the path).
struct NodePath {
  std::string command;
  std::string flag;
  std::string path;  // under the temporary root
  std::vector<std::string> aliases = {};
  std::vector<std::string> unless = {};
};
const std::vector<NodePath> kNodePaths = {
    {"gpunode runtime configure", "--config", "/etc/containerd/config.toml"},
    {"gpunode runtime revert", "--config", "/etc/containerd/config.toml"},
    {"gpunode doctor", "--host-root", "/"},
    {"gpunode cdi generate", "--driver-root", "/"},
    {"gpunode labels",
     "--output",
     "/etc/kubernetes/node-feature-discovery/features.d/gfd",
     {"-o", "--output-file"},
     {"--write node"}},
    {"gpunode device-plugin", "--kubelet-dir", "/var/lib/kubelet/device-plugins"},
};

struct Command {
  std::string doc;
  int line = 0;
  std::string text;
  std::vector<std::string> shown_output;  // a console block's lines under the command
};

struct Block {
  std::string doc;
  int line = 0;
  std::string language;
  std::vector<Command> commands;
};

std::string Trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

// A shell line scanned for quotes: the code before an unquoted `#` comment, and whether a quote
// is still open at the end (the command goes on on the next line).
struct Scanned {
  std::string code;
  char open_quote = 0;
};
Scanned Scan(const std::string& line, char open_quote) {
  Scanned out{"", open_quote};
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (out.open_quote != 0) {
      if (c == '\\' && out.open_quote == '"' && i + 1 < line.size()) {
        out.code += c;
        c = line[++i];
      } else if (c == out.open_quote) {
        out.open_quote = 0;
      }
    } else if (c == '\'' || c == '"') {
      out.open_quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      break;
    }
    out.code += c;
  }
  // A line that ends a quoted string keeps its indentation, which is inside the string.
  if (out.open_quote == 0) {
    out.code =
        open_quote != 0 ? out.code.substr(0, out.code.find_last_not_of(" \t") + 1) : Trim(out.code);
  }
  return out;
}

// Joins continuations (a trailing `\`, a quote left open, a loop to its `done`) into one command
// per entry, with the line it starts on; comment-only and empty lines are dropped. `prompt` ("$ "
// in console blocks) marks command lines, and the lines after one that lack it are its shown
// output.
std::vector<Command> Commands(const std::string& doc, const std::vector<std::string>& lines,
                              int first_line, const std::string& prompt) {
  std::vector<Command> commands;
  std::string pending;
  char open_quote = 0;
  int depth = 0;  // of for, while and if, which go on to their done or fi
  int start = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line = lines[i];
    if (pending.empty() && open_quote == 0 && depth == 0) {
      if (!prompt.empty() && line.rfind(prompt, 0) != 0) {
        if (!commands.empty() && !Trim(line).empty() && Trim(line) != "...")
          commands.back().shown_output.push_back(line);
        continue;
      }
      line = line.substr(prompt.size());
      start = first_line + static_cast<int>(i);
    }
    Scanned scanned = Scan(open_quote != 0 ? line : Trim(line), open_quote);
    open_quote = scanned.open_quote;
    if (open_quote != 0) {
      pending += scanned.code + "\n";
      continue;
    }
    std::string code = scanned.code;
    if (!code.empty() && code.back() == '\\') {
      pending += Trim(code.substr(0, code.size() - 1)) + " ";
      continue;
    }
    std::string first_word = code.substr(0, code.find(' '));
    if (first_word == "for" || first_word == "while" || first_word == "if") ++depth;
    if (first_word == "done" || first_word == "fi") --depth;
    if (depth > 0) {
      pending += code + "\n";
      continue;
    }
    std::string text = pending + code;
    pending.clear();
    if (!Trim(text).empty()) commands.push_back({doc, start, Trim(text), {}});
  }
  return commands;
}

bool HoldsCommands(const std::string& language) {
  return language == "sh" || language == "bash" || language == "console";
}

// README.md and docs/*.md, in that order, each read into its fenced blocks.
std::vector<Block> ReadBlocks() {
  std::vector<fs::path> docs;
  for (const fs::directory_entry& entry : fs::directory_iterator(kSource / "docs")) {
    if (entry.path().extension() == ".md") docs.push_back(entry.path());
  }
  std::sort(docs.begin(), docs.end());
  docs.insert(docs.begin(), kSource / "README.md");
  std::vector<Block> blocks;
  for (const fs::path& path : docs) {
    std::string doc = fs::relative(path, kSource).string();
    std::ifstream in(path);
    std::string line;
    int number = 0;
    std::optional<Block> open;
    std::vector<std::string> body;
    while (std::getline(in, line)) {
      ++number;
      std::string trimmed = Trim(line);
      if (trimmed.rfind("```", 0) != 0) {
        // Lines of an indented block (in a list) lose the fence's indentation.
        if (open) body.push_back(line);
        continue;
      }
      if (!open) {
        open = Block{doc, number, trimmed.substr(3), {}};
        body.clear();
        continue;
      }
      if (HoldsCommands(open->language)) {
        open->commands =
            Commands(doc, body, open->line + 1, open->language == "console" ? "$ " : "");
      } else {
        // Not run, but kept to check it holds no transcript.
        for (size_t i = 0; i < body.size(); ++i) {
          if (Trim(body[i]).rfind("$ ", 0) == 0) {
            open->commands.push_back({doc, open->line + 1 + static_cast<int>(i), body[i], {}});
          }
        }
      }
      blocks.push_back(*open);
      open.reset();
    }
  }
  return blocks;
}

const std::vector<Block>& Blocks() {
  static const std::vector<Block> blocks = ReadBlocks();
  return blocks;
}

std::vector<Block> CommandBlocks() {
  std::vector<Block> out;
  for (const Block& block : Blocks()) {
    if (HoldsCommands(block.language)) out.push_back(block);
  }
  return out;
}

const NotRun* FindNotRun(const std::string& command) {
  for (const NotRun& entry : kNotRun) {
    if (entry.command == command) return &entry;
  }
  return nullptr;
}

Expectation ExpectationOf(const std::string& command) {
  for (const Expectation& entry : kExpectations) {
    if (entry.command == command) return entry;
  }
  return {command, 0, ""};
}

// Every absolute path in `command` moved under `root`: a `/` that starts a word, a value after
// `=` or a redirection's target.
std::string UnderRoot(const std::string& command, const std::string& root) {
  std::string out;
  for (size_t i = 0; i < command.size(); ++i) {
    bool starts_word = i == 0 || std::string(" \t='\">").find(command[i - 1]) != std::string::npos;
    bool operator_slashes = i + 1 < command.size() && command[i + 1] == '/';  // jq's `//`
    if (command[i] == '/' && starts_word && !operator_slashes) out += root;
    out += command[i];
  }
  return out;
}

std::string WithNodePaths(std::string command, const std::string& root) {
  for (const NodePath& node : kNodePaths) {
    size_t at = command.find(node.command);
    if (at == std::string::npos) continue;
    bool given = command.find(node.flag + " ") != std::string::npos;
    for (const std::string& alias : node.aliases) {
      given = given || command.find(" " + alias + " ") != std::string::npos;
    }
    for (const std::string& mode : node.unless) {
      given = given || command.find(mode) != std::string::npos;
    }
    if (given) continue;
    size_t end = at + node.command.size();
    if (end < command.size() && command[end] != ' ') continue;
    command.insert(end, " " + node.flag + " " + root + node.path);
  }
  return command;
}

std::string ShellQuoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line.substr(0, line.find_last_not_of(' ') + 1));
  return lines;
}

// A pod asking for 2 GPUs that the scheduler has not placed.
json PendingGpuPod(const std::string& ns, const std::string& name) {
  return {
      {"kind", "Pod"},
      {"apiVersion", "v1"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec",
       {{"tolerations",
         {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}},
        {"containers",
         {{{"name", "main"},
           {"image", "train"},
           {"resources",
            {{"limits", {{"nvidia.com/gpu", "2"}}}, {"requests", {{"nvidia.com/gpu", "2"}}}}}}}}}},
      {"status", {{"phase", "Pending"}}}};
}

// The cluster for one block: only the objects it names, so that one example's broken node does
// not become another example's finding.
void AddClusterFor(const std::string& block_text, testing::ApiServerDouble& server) {
  auto names = [&](const std::string& word) { return block_text.find(word) != std::string::npos; };
  server.AddObject(DevicePluginDaemonSet());
  for (const char* node : {"gpu-node-3", "gpu-a"}) {
    if (!names(node)) continue;
    server.AddObject(GpuNode(node));
    server.AddObject(DevicePluginPod(node));
  }
  // Not selected by the device plugin's DaemonSet.
  if (names("gpu-b")) server.AddObject(GpuNode("gpu-b", 8, 8, false));
  // Drained, with two GPUs marked unhealthy since.
  if (names("gpu-xid")) {
    json node = GpuNode("gpu-xid", 8, 6);
    node["metadata"]["labels"].erase("gpu.count");  // counted by GPU feature discovery's label
    node["metadata"]["labels"]["nvidia.com/gpu.state"] = "draining";
    node["metadata"]["annotations"] = {{"gpunode.io/drain-cordoned", "true"}};
    node["spec"]["unschedulable"] = true;
    server.AddObject(node);
    server.AddObject(DevicePluginPod("gpu-xid"));
  }
  if (names("train-0")) server.AddObject(PendingGpuPod("ml", "train-0"));
  // Two pools for `cluster upgrade`: one node of training already runs the target driver.
  if (names("cluster upgrade")) {
    for (auto [node, pool, driver] : {std::tuple{"gpu-train-0", "training", "535.129.03"},
                                      std::tuple{"gpu-train-1", "training", "550.90.07"},
                                      std::tuple{"gpu-infer-0", "inference", "535.129.03"}}) {
      json gpu_node = GpuNode(node);
      gpu_node["metadata"]["labels"]["pool"] = pool;
      gpu_node["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] = driver;
      server.AddObject(gpu_node);
      server.AddObject(DevicePluginPod(node));
    }
  }
  if (names("finetune-0")) {
    server.LoadList((kSource / "tests/fixtures/cluster/pending-taint.json").string());
  }
}

// Plays the kubelet and the DaemonSet controller: a smoke pod succeeds when first looked at, and
// a prepull DaemonSet is seen by the controller, then becomes ready on its nodes, poll by poll.
class ClusterDouble {
 public:
  explicit ClusterDouble(const std::string& block_text) : server_({.token = ""}) {
    AddClusterFor(block_text, server_);
    server_.OnRequest([this](const testing::ApiServerDouble::Request& request) { Play(request); });
  }
  ~ClusterDouble() { server_.OnRequest(nullptr); }
  bool Start() { return server_.Start(); }
  std::string Kubeconfig() const { return server_.PlainKubeconfig(); }

 private:
  void Play(const testing::ApiServerDouble::Request& request) {
    if (request.method != "GET") return;
    const std::string namespaces = "/api/v1/namespaces/";
    size_t pods = request.path.find("/pods/gpunode-verify-");
    if (request.path.rfind(namespaces, 0) == 0 && pods != std::string::npos &&
        request.path.find("/log") == std::string::npos) {
      std::string ns = request.path.substr(namespaces.size(), pods - namespaces.size());
      std::string pod = request.path.substr(pods + std::string("/pods/").size());
      if (!server_.Pod(ns, pod).has_value()) return;
      server_.SetPodPhase(ns, pod, "Succeeded");
      server_.SetPodLog(ns, pod, SmokeDoctorReport());
      return;
    }
    const std::string prepull = "/daemonsets/gpunode-prepull";
    if (request.path.size() > prepull.size() &&
        request.path.compare(request.path.size() - prepull.size(), prepull.size(), prepull) == 0) {
      std::string ns = request.path.substr(std::string("/apis/apps/v1/namespaces/").size());
      ns = ns.substr(0, ns.find('/'));
      std::lock_guard<std::mutex> lock(mu_);
      int looked = ++prepull_looks_;
      if (looked == 2) server_.SetDaemonSetStatus(ns, "gpunode-prepull", 12, 0, 0);
      if (looked >= 3) server_.SetDaemonSetStatus(ns, "gpunode-prepull", 12, 12, 12);
    }
  }

  testing::ApiServerDouble server_;
  std::mutex mu_;
  int prepull_looks_ = 0;
};

// Copies a fixture file or tree to `to`, merging into what is there.
void Lay(const fs::path& source, const fs::path& to) {
  if (fs::is_directory(source)) {
    fs::create_directories(to);
    fs::copy(source, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    return;
  }
  fs::create_directories(to.parent_path());
  fs::copy_file(source, to, fs::copy_options::overwrite_existing);
}

// Names a block in gtest's messages by where it is, not by its bytes.
void PrintTo(const Block& block, std::ostream* os) { *os << block.doc << ":" << block.line; }

class DocExample : public ::testing::TestWithParam<Block> {};

TEST_P(DocExample, RunsAsWritten) {
  const Block& block = GetParam();
  std::string block_text;
  for (const Command& command : block.commands) block_text += command.text + "\n";

  testing::TempDir dir("gpunode-doc");
  const fs::path work = fs::path(dir.path()) / "work";
  const fs::path root = fs::path(dir.path()) / "root";
  // Where the image and `cmake --install` put the binary and its kubectl plugin link.
  const fs::path bin = root / "usr/local/bin";
  const fs::path results = fs::path(dir.path()) / "results";
  for (const fs::path& d : {work, root, bin, results}) fs::create_directories(d);
  fs::create_symlink(build_paths::kBinary, bin / "gpunode");
  fs::create_symlink("gpunode", bin / "kubectl-gpunode");
  if (block_text.find("tls.crt") != std::string::npos) {
    // The webhook's serving certificate, made for the test rather than kept with the fixtures.
    testing::ProcessResult made = testing::RunProcess(
        {"/bin/sh", "-c",
         "cd " + ShellQuoted(work.string()) +
             " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-days 2 -subj /CN=gpunode-webhook.gpunode-system.svc -keyout tls.key -out tls.crt"});
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  for (const Fixture& fixture : kFixtures) {
    const std::string& when = fixture.when.empty() ? fixture.path : fixture.when;
    if (block_text.find(when) == std::string::npos) continue;
    fs::path to = fixture.path.front() == '/' ? root / fs::path(fixture.path).relative_path()
                                              : work / fixture.path;
    if (fixture.source.empty()) {
      fs::create_directories(to);
    } else {
      Lay(kSource / fixture.source, to);
    }
  }
  ClusterDouble cluster(block_text);
  ASSERT_TRUE(cluster.Start());
  std::string kubeconfig = dir.Write("kubeconfig", cluster.Kubeconfig());

  // One shell for the block, each command's output and exit code to its own files.
  // A daemon is given its second from the moment it handles SIGTERM (blocked for its signalfd,
  // or caught): before that a slow start, as under the sanitizers, would die of the signal.
  std::string script =
      "handles_sigterm() {\n"
      "  for field in SigBlk SigCgt; do\n"
      "    mask=$(sed -n \"s/^$field:[[:space:]]*//p\" /proc/$1/status 2>/dev/null)\n"
      "    last4=${mask#\"${mask%????}\"}\n"
      "    case ${last4%???} in [4567cdefCDEF]) return 0 ;; esac\n"  // bit 15: SIGTERM
      "  done\n"
      "  return 1\n"
      "}\n"
      "cd " +
      ShellQuoted(work.string()) + "\n";
  std::vector<const Command*> run;
  for (const Command& command : block.commands) {
    if (FindNotRun(command.text) != nullptr) continue;
    std::string line = WithNodePaths(UnderRoot(command.text, root.string()), root.string());
    std::string files = (results / std::to_string(run.size())).string();
    if (kDaemons.count(command.text) != 0) {
      line +=
          " &\n  pid=$!\n"
          "  until handles_sigterm $pid || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done\n"
          "  sleep 1; kill -TERM $pid 2>/dev/null; wait $pid";
    }
    script += "{ " + line + "\n} >" + files + ".out 2>" + files + ".err </dev/null; echo $? >" +
              files + ".rc\n";
    run.push_back(&command);
  }
  const char* path = std::getenv("PATH");
  testing::ProcessResult shell = testing::RunProcess(
      {"/bin/sh", "-c", script},
      {"PATH=" + bin.string() + ":" + (path != nullptr ? path : "/usr/bin:/bin"),
       "GPUNODE_SIM=dgx-h100", "KUBECONFIG=" + kubeconfig, "HOME=" + dir.path(), "NODE_NAME="});
  EXPECT_EQ(shell.exit_code, 0) << shell.err;

  for (size_t i = 0; i < run.size(); ++i) {
    const Command& command = *run[i];
    SCOPED_TRACE(command.doc + ":" + std::to_string(command.line) + ": " + command.text);
    std::string files = (results / std::to_string(i)).string();
    std::string out = Slurp(files + ".out");
    std::string err = Slurp(files + ".err");
    std::string rc = Trim(Slurp(files + ".rc"));
    if (kNeedsTheMachine.count(command.text) != 0 && rc == "3") {
      GTEST_SKIP() << command.text << ": " << err;
    }
    Expectation expected = ExpectationOf(command.text);
    EXPECT_EQ(rc, std::to_string(expected.exit_code)) << "stdout:\n" << out << "stderr:\n" << err;
    if (!expected.output.empty()) {
      EXPECT_THAT(out + err, ::testing::HasSubstr(expected.output));
    }
    // Paths under the temporary root are printed as the doc shows them, without it.
    std::string output = out + err;
    for (size_t at; (at = output.find(root.string())) != std::string::npos;) {
      output.erase(at, root.string().size());
    }
    std::vector<std::string> printed = Lines(output);
    for (const std::string& shown : command.shown_output) {
      EXPECT_THAT(printed, ::testing::Contains(shown.substr(0, shown.find_last_not_of(' ') + 1)))
          << "the doc shows a line the command does not print; it printed:\n"
          << out << err;
    }
  }
}

std::string BlockName(const ::testing::TestParamInfo<Block>& info) {
  std::string name = info.param.doc + "_" + std::to_string(info.param.line);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Docs, DocExample, ::testing::ValuesIn(CommandBlocks()), BlockName);

// A fence that names no language could hold anything; naming it says whether it holds commands
// (sh, bash, console), so a new command cannot hide in an unnamed block.
TEST(DocExamples, EveryFenceNamesItsLanguage) {
  for (const Block& block : Blocks()) {
    EXPECT_FALSE(block.language.empty())
        << block.doc << ":" << block.line
        << ": name the fence's language: sh or console for commands, text for output and usage";
  }
}

// A transcript (`$ command` and what it prints) is a console block, which this test runs.
TEST(DocExamples, TranscriptsAreConsoleBlocks) {
  for (const Block& block : Blocks()) {
    if (HoldsCommands(block.language)) continue;
    for (const Command& command : block.commands) {
      ADD_FAILURE() << command.doc << ":" << command.line << ": a `$ ` line in a " << block.language
                    << " block; make it a console block: " << command.text;
    }
  }
}

// Every table entry is a command some doc still has: a stale one would hide that the doc moved.
TEST(DocExamples, TablesNameOnlyCommandsOfTheDocs) {
  std::set<std::string> commands;
  for (const Block& block : CommandBlocks()) {
    for (const Command& command : block.commands) commands.insert(command.text);
  }
  for (const NotRun& entry : kNotRun) {
    EXPECT_EQ(commands.count(entry.command), 1u) << "kNotRun: no doc has " << entry.command;
  }
  for (const Expectation& entry : kExpectations) {
    EXPECT_EQ(commands.count(entry.command), 1u) << "kExpectations: no doc has " << entry.command;
  }
  for (const std::string& command : kNeedsTheMachine) {
    EXPECT_EQ(commands.count(command), 1u) << "kNeedsTheMachine: no doc has " << command;
  }
  for (const std::string& daemon : kDaemons) {
    EXPECT_EQ(commands.count(daemon), 1u) << "kDaemons: no doc has " << daemon;
    EXPECT_EQ(FindNotRun(daemon), nullptr) << daemon;
  }
}

}  // namespace
}  // namespace gpunode
