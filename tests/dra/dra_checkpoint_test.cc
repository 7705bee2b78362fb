// The DRA plugin's checkpoint: what it keeps, and that a torn or edited file is refused with one
// line and nothing deleted.
#include "host/dra_checkpoint.h"

#include <filesystem>
#include <fstream>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "temp_dir.h"

namespace gpunode::dra {
namespace {

using ::testing::HasSubstr;

host::DraCheckpoint Sample() {
  host::DraCheckpoint checkpoint;
  checkpoint.boot_id = "boot-1";
  checkpoint.claims["uid-1"] = {.name_space = "ml",
                                .name = "train-gpu",
                                .state = host::ClaimState::kPrepareCompleted,
                                .devices = {{.requests = {"gpu"},
                                             .pool = "node-a",
                                             .device = "gpu-3",
                                             .cdi_ids = {"k8s.gpu.nvidia.com/claim=uid-1-gpu-3"}}}};
  checkpoint.claims["uid-2"] = {.name_space = "ml",
                                .name = "half",
                                .state = host::ClaimState::kPrepareStarted,
                                .mps_daemons = {"uid-2-0"}};
  return checkpoint;
}

TEST(DraCheckpoint, WhatIsWrittenReadsBack) {
  testing::TempDir dir("gpunode-dra-checkpoint");
  std::string path = dir.path() + "/checkpoint.json";
  ASSERT_TRUE(host::WriteDraCheckpoint(path, Sample()).ok());
  absl::StatusOr<std::optional<host::DraCheckpoint>> read = host::ReadDraCheckpoint(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ(**read, Sample());
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

TEST(DraCheckpoint, AMissingFileIsAFirstStart) {
  absl::StatusOr<std::optional<host::DraCheckpoint>> read =
      host::ReadDraCheckpoint("/nonexistent/checkpoint.json");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->has_value());
}

TEST(DraCheckpoint, AnEditedOrTornFileIsRefusedInOneLineAndKept) {
  testing::TempDir dir("gpunode-dra-checkpoint");
  std::string path = dir.path() + "/checkpoint.json";
  std::string text = host::RenderDraCheckpoint(Sample());
  std::string edited = text;
  edited.replace(edited.find("gpu-3"), 5, "gpu-4");
  for (const std::string& bad : {edited, text.substr(0, text.size() / 2), std::string("[]")}) {
    std::ofstream(path) << bad;
    absl::StatusOr<std::optional<host::DraCheckpoint>> read = host::ReadDraCheckpoint(path);
    ASSERT_FALSE(read.ok());
    std::string message(read.status().message());
    EXPECT_THAT(message, HasSubstr(path));
    EXPECT_THAT(message, HasSubstr("move it away"));
    EXPECT_EQ(message.find('\n'), std::string::npos);
    EXPECT_TRUE(std::filesystem::exists(path));
  }
}

TEST(DraCheckpoint, TheFuzzersSeedIsACheckpointAsWritten) {
  // fuzz/dra's seed starts the fuzzer past the checksum; it must stay one the reader accepts.
  std::string path =
      std::string(build_paths::kSourceDir) + "/fuzz/dra/corpus/checkpoint/two-claims.json";
  absl::StatusOr<std::optional<host::DraCheckpoint>> read = host::ReadDraCheckpoint(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->claims.size(), 2u);
}

}  // namespace
}  // namespace gpunode::dra
