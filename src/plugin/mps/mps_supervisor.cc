#include "plugin/mps/mps_supervisor.h"

#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/file_io.h"
#include "core/log.h"
#include "nvml/system.h"
#include "plugin/mps/mps_plan_key.h"
#include "plugin/mps/mps_readiness.h"
#include "plugin/rm/resources.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {

using plugin_config::Config;
using plugin_config::SharingStrategy;

namespace {

constexpr auto kStartTimeout = std::chrono::seconds(10);

const char* ModeName(nvmlComputeMode_t mode) {
  switch (mode) {
    case NVML_COMPUTEMODE_DEFAULT:
      return "DEFAULT";
    case NVML_COMPUTEMODE_EXCLUSIVE_THREAD:
      return "EXCLUSIVE_THREAD";
    case NVML_COMPUTEMODE_PROHIBITED:
      return "PROHIBITED";
    case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS:
      return "EXCLUSIVE_PROCESS";
  }
  return "unknown";
}

absl::Status MakeDirectory(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat(path, ": ", ec.message()));
  return absl::OkStatus();
}

// The last line the daemon wrote to its control.log, to say in an error why it did not answer.
std::string LastLogLine(const host::MpsPaths& paths) {
  absl::StatusOr<std::string> log = core::ReadFile(paths.ControlLog());
  if (!log.ok()) return std::string(log.status().message());
  absl::string_view text = absl::StripTrailingAsciiWhitespace(*log);
  size_t newline = text.rfind('\n');
  std::string last(newline == absl::string_view::npos ? text : text.substr(newline + 1));
  return last.empty() ? "(empty)" : last;
}

// Children of this process, from /proc (the adopted daemons among them).
std::vector<pid_t> Children(const core::HostRoot& host) {
  std::vector<pid_t> out;
  const pid_t self = getpid();
  absl::StatusOr<std::vector<std::string>> entries = host.ListDir("/proc");
  if (!entries.ok()) return out;
  for (const std::string& entry : *entries) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry, &pid)) continue;
    absl::StatusOr<std::string> stat = host.ReadFile(absl::StrCat("/proc/", pid, "/stat"));
    if (!stat.ok()) continue;
    // "pid (comm) state ppid ...": the command may hold spaces, so split after its ')'.
    size_t close = stat->rfind(')');
    if (close == std::string::npos) continue;
    std::vector<std::string> fields = absl::StrSplit(stat->substr(close + 2), ' ');
    int ppid = 0;
    if (fields.size() > 1 && absl::SimpleAtoi(fields[1], &ppid) && ppid == self) {
      out.push_back(pid);
    }
  }
  return out;
}

}  // namespace

MpsGpu ReadMpsGpu(const nvml::Device& device, const std::string& uuid, unsigned index) {
  MpsGpu gpu{.uuid = uuid, .index = index};
  gpu.name = device.Name().value_or("unknown GPU");
  absl::StatusOr<nvml::MemoryInfo> memory = device.Memory();
  if (memory.ok()) gpu.memory_bytes = memory->total_bytes;
  absl::StatusOr<nvml::ComputeCapability> cc = device.CudaComputeCapability();
  if (cc.ok()) {
    gpu.cc_major = cc->major;
    gpu.cc_minor = cc->minor;
  }
  return gpu;
}

absl::StatusOr<std::vector<MpsPlan>> PlanMps(const nvml::Library& library, const Config& config,
                                             const Node& node) {
  std::vector<MpsPlan> plans;
  if (config.sharing_strategy() != SharingStrategy::kMps) return plans;
  std::vector<std::string> warnings;
  absl::StatusOr<std::vector<Resource>> resources = BuildResources(node, config, &warnings);
  if (!resources.ok()) return resources.status();
  for (const Resource& resource : *resources) {
    if (!resource.mps) continue;
    std::vector<MpsGpu> gpus;
    for (const NodeGpu* node_gpu : MpsGpus(resource, node)) {
      absl::StatusOr<nvml::Device> handle = nvml::DeviceByUuid(library, node_gpu->uuid);
      if (!handle.ok()) return handle.status();
      gpus.push_back(ReadMpsGpu(*handle, node_gpu->uuid, node_gpu->index));
    }
    absl::StatusOr<MpsLimits> limits = ComputeMpsLimits(resource.name, resource.replicas, gpus);
    if (!limits.ok()) return limits.status();
    plans.push_back({resource.name, host::MpsPaths{config.mps_root, resource.name}, *limits,
                     MpsPlanKey(resource, node)});
  }
  return plans;
}

MpsSupervisor::MpsSupervisor(const nvml::Library& library, std::string binary,
                             std::vector<MpsPlan> plans, core::Env& env)
    : library_(library), binary_(std::move(binary)), plans_(std::move(plans)), env_(env) {}

absl::Status MpsSupervisor::SetComputeModes(nvmlComputeMode_t mode) {
  absl::Status first;
  for (const MpsPlan& plan : plans_) {
    for (const MpsGpuLimit& g : plan.limits.gpus) {
      absl::StatusOr<nvml::Device> device = nvml::DeviceByUuid(library_, g.gpu.uuid);
      absl::Status st = device.ok() ? device->SetComputeMode(mode) : device.status();
      absl::StatusOr<nvmlComputeMode_t> now =
          device.ok() ? device->ComputeMode() : absl::StatusOr<nvmlComputeMode_t>(st);
      if (st.ok() && now.ok() && *now == mode) {
        spdlog::info("GPU {} ({}): compute mode {}", g.gpu.index, g.gpu.uuid, ModeName(*now));
        continue;
      }
      if (st.ok()) st = now.ok() ? absl::InternalError("did not take") : now.status();
      st = absl::FailedPreconditionError(absl::StrCat(
          "GPU ", g.gpu.index, " (", g.gpu.uuid, "): cannot set compute mode ", ModeName(mode),
          ": ", st.message(), "; run the MPS control daemon as root (privileged)"));
      spdlog::error("{}", st.message());
      if (first.ok()) first = st;
    }
  }
  return first;
}

absl::Status MpsSupervisor::StartDaemon(const MpsPlan& plan) {
  const host::MpsPaths& paths = plan.paths;
  unlink(paths.StartedMarker().c_str());
  for (const std::string& dir : {paths.PipeDir(), paths.LogDir()}) {
    if (absl::Status st = MakeDirectory(dir); !st.ok()) return st;
  }
  MpsControl control(binary_, paths, env_);
  std::vector<std::string> uuids;
  for (const MpsGpuLimit& g : plan.limits.gpus) uuids.push_back(g.gpu.uuid);
  // A daemon of an earlier run may still answer on the pipe: keep it, only the limits are set.
  if (!control.Send("get_default_active_thread_percentage").ok()) {
    if (absl::Status st = control.StartDaemon(uuids); !st.ok()) return st;
  }
  absl::StatusOr<std::string> answer;
  const absl::Time deadline = env_.Now() + absl::FromChrono(kStartTimeout);
  do {
    answer = control.Send("get_default_active_thread_percentage");
    if (answer.ok()) break;
  } while (env_.SleepFor(absl::Milliseconds(50)) && env_.Now() < deadline);
  if (!answer.ok()) {
    return absl::UnavailableError(
        absl::StrCat(plan.resource, ": the MPS control daemon did not answer on ", paths.PipeDir(),
                     ": ", answer.status().message(), "; last line of ", paths.ControlLog(), ": ",
                     LastLogLine(paths)));
  }
  // A limit left out is not sent, so that the daemon's own default holds (a claim's choice).
  std::vector<std::string> commands;
  if (plan.limits.active_thread_percentage) {
    commands.push_back(absl::StrCat("set_default_active_thread_percentage ",
                                    *plan.limits.active_thread_percentage));
  }
  for (const MpsGpuLimit& g : plan.limits.gpus) {
    if (!g.pinned_mib) continue;
    commands.push_back(
        absl::StrCat("set_default_device_pinned_mem_limit ", g.position, " ", *g.pinned_mib, "M"));
  }
  for (const std::string& command : commands) {
    absl::StatusOr<std::string> said = control.Send(command);
    if (!said.ok()) return said.status();
  }
  std::vector<std::string> lines = DescribeMpsLimits(plan.resource, plan.limits);
  for (const std::string& line : lines) spdlog::info("MPS {}", line);
  return core::WriteFileAtomic(paths.StartedMarker(),
                               plan.key + "\n" + absl::StrJoin(lines, "\n") + "\n", 0644,
                               core::Backup::kNone);
}

absl::Status MpsSupervisor::Start() {
  for (const MpsPlan& plan : plans_) unlink(host::MpsReadyMarker(plan.paths.root).c_str());
  if (absl::Status st = SetComputeModes(NVML_COMPUTEMODE_EXCLUSIVE_PROCESS); !st.ok()) {
    SetComputeModes(NVML_COMPUTEMODE_DEFAULT).IgnoreError();
    return st;
  }
  for (const MpsPlan& plan : plans_) {
    if (absl::Status st = StartDaemon(plan); !st.ok()) {
      Stop();
      return st;
    }
    if (plan.paths.resource.empty()) {
      spdlog::info("{}: MPS control daemon started; its pipe directory is {}", plan.resource,
                   plan.paths.PipeDir());
    } else {
      spdlog::info("{}: MPS control daemon started; clients use CUDA_MPS_PIPE_DIRECTORY={}",
                   plan.resource, plan.paths.ContainerPipeDir());
    }
  }
  if (!plans_.empty()) {
    const std::string ready = host::MpsReadyMarker(plans_.front().paths.root);
    if (absl::Status st = core::WriteFileAtomic(ready, "", 0644, core::Backup::kNone); !st.ok()) {
      Stop();
      return st;
    }
  }
  return absl::OkStatus();
}

int MpsSupervisor::Check() {
  int restarted = 0;
  for (const MpsPlan& plan : plans_) {
    // A connect, not a command: NVIDIA's control daemon serves one client at a time and drops
    // the other ("Cannot send command to MPS control daemon process"), so a probe sent every
    // period would now and then fail an operator's own command, and its own failure would
    // restart a healthy daemon. A daemon that exited leaves its socket refusing connections.
    if (MpsControlAccepts(plan.paths.ControlSocket())) continue;
    spdlog::error("{}: the MPS control daemon does not accept on {}; starting it again",
                  plan.resource, plan.paths.ControlSocket());
    ++restarted;
    if (absl::Status st = StartDaemon(plan); !st.ok()) {
      spdlog::error("{}: {}", plan.resource, st.message());
    } else {
      spdlog::warn("{}: MPS control daemon started again", plan.resource);
    }
  }
  return restarted;
}

void MpsSupervisor::QuitDaemon(const MpsPlan& plan) {
  unlink(plan.paths.StartedMarker().c_str());
  MpsControl control(binary_, plan.paths, env_);
  absl::StatusOr<std::string> said = control.Send("quit");
  if (!said.ok()) {
    spdlog::warn("{}: quit: {}", plan.resource, said.status().message());
    return;
  }
  // quit returns before the daemon is gone: wait until its pipe stops answering (also after a
  // stop, which is when daemons are told to quit).
  const absl::Time deadline = env_.Now() + absl::Seconds(5);
  while (MpsControlAccepts(plan.paths.ControlSocket())) {
    if (env_.Now() > deadline) break;
    ReapChildren();
    env_.Pause(absl::Milliseconds(20));
  }
  spdlog::info("{}: MPS control daemon quit", plan.resource);
}

void MpsSupervisor::Stop() {
  for (const MpsPlan& plan : plans_) unlink(host::MpsReadyMarker(plan.paths.root).c_str());
  for (const MpsPlan& plan : plans_) QuitDaemon(plan);
  if (int killed = AwaitChildren(env_, absl::Seconds(5)); killed > 0) {
    spdlog::warn("killed {} MPS process(es) that did not quit", killed);
  }
  SetComputeModes(NVML_COMPUTEMODE_DEFAULT).IgnoreError();
}

absl::Status AdoptDaemons() {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    return absl::InternalError(absl::StrCat("prctl(PR_SET_CHILD_SUBREAPER): ", strerror(errno)));
  }
  return absl::OkStatus();
}

int ReapChildren() {
  int reaped = 0;
  while (true) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    ++reaped;
  }
  return reaped;
}

int AwaitChildren(core::Env& env, absl::Duration timeout) {
  const absl::Time deadline = env.Now() + timeout;
  while (true) {
    ReapChildren();
    if (Children(env.host()).empty()) return 0;
    if (env.Now() > deadline) break;
    env.Pause(absl::Milliseconds(20));
  }
  int killed = 0;
  for (pid_t pid : Children(env.host())) {
    if (kill(pid, SIGKILL) == 0) ++killed;
  }
  while (!Children(env.host()).empty() && ReapChildren() >= 0) {
    if (env.Now() > deadline + absl::Seconds(2)) break;
    env.Pause(absl::Milliseconds(20));
  }
  return killed;
}

absl::Status MountMpsShm(const std::string& root) {
  const std::string shm = host::MpsShmDir(root);
  if (absl::Status st = MakeDirectory(shm); !st.ok()) return st;
  struct statfs fs {};
  if (statfs(shm.c_str(), &fs) == 0 && fs.f_type == 0x01021994 /* TMPFS_MAGIC */ &&
      core::IsMountPoint(shm)) {
    spdlog::info("{}: a tmpfs is mounted already", shm);
    return absl::OkStatus();
  }
  if (mount("tmpfs", shm.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RELATIME,
            "size=65536k") != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("mount tmpfs on ", shm, ": ", strerror(errno),
                     "; run the MPS control daemon privileged (CAP_SYS_ADMIN) with the MPS root "
                     "mounted Bidirectional"));
  }
  spdlog::info("{}: tmpfs mounted (64 MiB) for the MPS clients' /dev/shm", shm);
  return absl::OkStatus();
}

absl::Status UnmountMpsShm(const std::string& root) {
  const std::string shm = host::MpsShmDir(root);
  // Detached: a client that still has the tmpfs open keeps its files, and the mount point is
  // free at once for the root to be removed.
  if (umount2(shm.c_str(), MNT_DETACH) == 0) {
    spdlog::info("{}: tmpfs unmounted", shm);
    return absl::OkStatus();
  }
  // EINVAL: not a mount point (never mounted, or unmounted already); ENOENT: no such directory.
  if (errno == EINVAL || errno == ENOENT) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("unmount ", shm, ": ", strerror(errno),
                   "; run the MPS control daemon privileged (CAP_SYS_ADMIN) with the MPS root "
                   "mounted Bidirectional"));
}

}  // namespace gpunode::plugin
