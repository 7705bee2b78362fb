// PluginDaemon in this process, without NVML or a kubelet: the order in which it watches its
// config and reads it. The config loader plays the config source, so a change can be made at
// exactly the moment that matters (after the caller's read, before the watch is open) instead of
// being raced against.
#include "plugin/daemon/plugin_daemon.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "core/system_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/base_sink.h"
#include "spdlog/spdlog.h"
#include "temp_dir.h"

namespace gpunode::plugin {
namespace {

using plugin_config::ResolvedConfig;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::chrono::seconds kWait{15};

// Keeps every log line and wakes whoever waits for one.
class CapturingSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  bool WaitFor(const std::string& text) {
    std::unique_lock lock(text_mutex_);
    return changed_.wait_for(lock, kWait, [&] { return text_.find(text) != std::string::npos; });
  }
  std::string Text() {
    std::lock_guard lock(text_mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::lock_guard lock(text_mutex_);
    text_.append(msg.payload.data(), msg.payload.size()).push_back('\n');
    changed_.notify_all();
  }
  void flush_() override {}

 private:
  std::mutex text_mutex_;
  std::condition_variable changed_;
  std::string text_;
};

ResolvedConfig ConfigNamed(const std::string& file, bool pass_device_specs) {
  ResolvedConfig resolved;
  resolved.config_file = file;
  resolved.config.pass_device_specs = pass_device_specs;
  return resolved;
}

class PluginDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sink_ = std::make_shared<CapturingSink>();
    previous_logger_ = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink_));
    spdlog::set_level(spdlog::level::info);
    std::filesystem::create_directory(dir_.path() + "/device-plugins");
    std::filesystem::create_directory(dir_.path() + "/config");
    options_.kubelet_dir = dir_.path() + "/device-plugins";
    options_.kubelet_socket = "";  // serve without registering
    options_.cdi_spec_dir = dir_.path();
    options_.config.watch_dir = dir_.path() + "/config";
    options_.health.xids.enabled = false;
    options_.config.refused = [this](const std::string& why) {
      std::lock_guard lock(refused_mutex_);
      refused_ = why;
    };
  }
  void TearDown() override {
    if (daemon_thread_.joinable()) Stop();
    spdlog::set_default_logger(previous_logger_);
  }

  // Runs the daemon on its own thread from `start`, as the caller read it; signals are blocked
  // here first, so the daemon's signalfd receives the stop.
  void Run(const ResolvedConfig& start, ConfigLoader loader) {
    absl::StatusOr<core::SignalFd> signals = core::SignalFd::Open();
    ASSERT_TRUE(signals.ok()) << signals.status();
    daemon_ = std::make_unique<PluginDaemon>(nullptr, options_, std::move(loader),
                                             std::move(*signals), env_);
    daemon_thread_ = std::thread([this, start] { run_status_ = daemon_->Run(start); });
  }
  void Stop() {
    kill(getpid(), SIGTERM);
    daemon_thread_.join();
    EXPECT_TRUE(run_status_.ok()) << run_status_;
  }

  testing::TempDir dir_{"gpunode-daemon"};
  std::shared_ptr<CapturingSink> sink_;
  std::shared_ptr<spdlog::logger> previous_logger_;
  DaemonOptions options_;
  core::SystemEnv env_;
  std::unique_ptr<PluginDaemon> daemon_;
  std::thread daemon_thread_;
  absl::Status run_status_;
  std::mutex refused_mutex_;
  std::string refused_;
};

// The config changed after the caller read it and before the daemon watched it: no inotify event
// can tell, so the daemon reads it once more with the watch open and starts with the new one.
TEST_F(PluginDaemonTest, ConfigChangedBeforeTheWatchOpensIsTheOneThatStarts) {
  std::string file = options_.config.watch_dir + "/config.yaml";
  std::atomic<int> reads = 0;
  Run(ConfigNamed(file, false), [&]() -> absl::StatusOr<ResolvedConfig> {
    ++reads;
    return ConfigNamed(file, true);
  });
  ASSERT_TRUE(sink_->WaitFor("Running with config")) << sink_->Text();
  Stop();
  std::string log = sink_->Text();
  EXPECT_EQ(reads, 1);
  EXPECT_THAT(log, HasSubstr("watching " + options_.config.watch_dir + " for config changes"));
  EXPECT_THAT(log, HasSubstr("config changed before it was watched (" + file +
                             "): starting with the new one"));
  EXPECT_THAT(log, HasSubstr("\"passDeviceSpecs\":true"));
  EXPECT_THAT(log, Not(HasSubstr("\"passDeviceSpecs\":false")));
  // The watch was open before that read: it comes first in the log.
  EXPECT_LT(log.find("watching "), log.find("config changed before it was watched"));
}

// Unchanged: one more read, nothing said, the caller's config runs.
TEST_F(PluginDaemonTest, ConfigUnchangedSinceTheReadStartsAsRead) {
  std::string file = options_.config.watch_dir + "/config.yaml";
  Run(ConfigNamed(file, false),
      [&]() -> absl::StatusOr<ResolvedConfig> { return ConfigNamed(file, false); });
  ASSERT_TRUE(sink_->WaitFor("Running with config")) << sink_->Text();
  Stop();
  EXPECT_THAT(sink_->Text(), Not(HasSubstr("before it was watched")));
  EXPECT_THAT(sink_->Text(), HasSubstr("\"passDeviceSpecs\":false"));
}

// A version that does not parse, published in the same window, is refused as a later one would
// be: the configuration read at start runs, and the refusal is reported (a node event).
TEST_F(PluginDaemonTest, BrokenConfigBeforeTheWatchOpensKeepsTheOneReadAtStart) {
  std::string file = options_.config.watch_dir + "/config.yaml";
  Run(ConfigNamed(file, false), []() -> absl::StatusOr<ResolvedConfig> {
    return absl::InvalidArgumentError("config.yaml:3: sharing: not a map");
  });
  ASSERT_TRUE(sink_->WaitFor("Running with config")) << sink_->Text();
  Stop();
  EXPECT_THAT(sink_->Text(),
              HasSubstr("config changed before it was watched but is not applied, keeping the "
                        "configuration read at start: config.yaml:3: sharing: not a map"));
  EXPECT_THAT(sink_->Text(), HasSubstr("\"passDeviceSpecs\":false"));
  std::lock_guard lock(refused_mutex_);
  EXPECT_EQ(refused_, "config.yaml:3: sharing: not a map");
}

// A config directory that cannot be watched: the daemon says where and what to do, reads nothing
// more, and runs the caller's config (changes then wait for a SIGHUP).
TEST_F(PluginDaemonTest, UnwatchableConfigDirectoryIsSaidAndTheStartConfigRuns) {
  options_.config.watch_dir = dir_.path() + "/absent";
  std::atomic<int> reads = 0;
  Run(ConfigNamed("", false), [&]() -> absl::StatusOr<ResolvedConfig> {
    ++reads;
    return ConfigNamed("", true);
  });
  ASSERT_TRUE(sink_->WaitFor("Running with config")) << sink_->Text();
  Stop();
  EXPECT_EQ(reads, 0);
  EXPECT_THAT(sink_->Text(), HasSubstr("config changes are applied on SIGHUP only: cannot watch " +
                                       options_.config.watch_dir +
                                       ": No such file or directory; "
                                       "mount the config's directory"));
}

}  // namespace
}  // namespace gpunode::plugin
