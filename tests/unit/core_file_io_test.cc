#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/file_io.h"
#include "gtest/gtest.h"

namespace gpunode::core {
namespace {

namespace fs = std::filesystem;

fs::path FreshDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(FileIo, ReadMissingFileIsNotFoundNamingThePath) {
  absl::StatusOr<std::string> data = ReadFile("/nonexistent/file");
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(data.status().message(), "/nonexistent/file: cannot open: No such file or directory");
}

TEST(FileIo, AMountPointIsADirectoryOnAnotherDeviceThanItsParent) {
  // /proc is procfs on every Linux this runs on, never the root file system's device.
  EXPECT_TRUE(IsMountPoint("/proc"));
  fs::path dir = FreshDir("mount-point");
  EXPECT_FALSE(IsMountPoint(dir.string()));
  ASSERT_TRUE(WriteFileAtomic((dir / "file").string(), "x", 0644, Backup::kNone).ok());
  EXPECT_FALSE(IsMountPoint((dir / "file").string()));
  EXPECT_FALSE(IsMountPoint((dir / "missing").string()));
  EXPECT_FALSE(IsMountPoint("/")) << "its parent is itself";
}

TEST(FileIo, AtomicWriteBacksUpTheOldFileAndSetsTheMode) {
  fs::path dir = FreshDir("atomic-write");
  std::string path = (dir / "labels").string();
  ASSERT_TRUE(WriteFileAtomic(path, "old\n", 0644, Backup::kCopyToBak).ok());
  EXPECT_FALSE(fs::exists(path + ".bak"));  // nothing to back up the first time
  ASSERT_TRUE(WriteFileAtomic(path, "new\n", 0600, Backup::kCopyToBak).ok());
  EXPECT_EQ(ReadFile(path).value(), "new\n");
  EXPECT_EQ(ReadFile(path + ".bak").value(), "old\n");
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // No temporary files are left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 2);
}

// A write that need not outlive the boot replaces the file by exchanging names (no write-out
// inside the call): still a new file in one step, the old one gone from the directory, and a
// reader that opened the old one reads it whole.
TEST(FileIo, AWriteForThisBootReplacesTheFileWholeAndLeavesNoOther) {
  fs::path dir = FreshDir("atomic-write-this-boot");
  std::string path = (dir / "checkpoint").string();
  ASSERT_TRUE(WriteFileAtomic(path, "first\n", 0644, Backup::kNone, Durability::kThisBoot).ok());
  int reader = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  struct stat before {};
  ASSERT_EQ(::fstat(reader, &before), 0);
  ASSERT_TRUE(
      WriteFileAtomic(path, "second, longer\n", 0600, Backup::kNone, Durability::kThisBoot).ok());
  EXPECT_EQ(ReadFile(path).value(), "second, longer\n");
  char old[16] = {};
  EXPECT_EQ(::pread(reader, old, sizeof(old), 0), 6);
  EXPECT_EQ(std::string(old), "first\n");
  ::close(reader);
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_NE(after.st_ino, before.st_ino) << "a new file, not the old one written over";
  EXPECT_EQ(after.st_mode & 0777, 0600u);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"checkpoint"});
}

// A rename over /dev/null would give every program on the machine a regular file in its place:
// what is not a regular file is refused and left as it was, a pipe and a directory as a device.
TEST(FileIo, AtomicWriteRefusesWhatIsNotAFileAndLeavesIt) {
  fs::path dir = FreshDir("atomic-write-special");
  const std::string fifo = (dir / "pipe").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string subdir = (dir / "sub").string();
  fs::create_directory(subdir);
  for (const auto& [path, kind] : {std::pair<std::string, std::string>{fifo, "a pipe"},
                                   {subdir, "a directory"},
                                   {"/dev/null", "a character device"}}) {
    absl::Status st = WriteFileAtomic(path, "labels\n", 0644, Backup::kCopyToBak);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << path;
    EXPECT_EQ(st.message(), path + ": not a regular file (" + kind +
                                "), and writing it would replace it; give the path of a file");
  }
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(fs::is_directory(subdir));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_FALSE(fs::exists(fifo + ".bak"));
  EXPECT_FALSE(fs::exists("/dev/null.bak"));
}

TEST(FileIo, AtomicWriteKeepsTheOwnerOfAReplacedFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the file another owner";
  fs::path dir = FreshDir("atomic-owner");
  std::string path = (dir / "config.toml").string();
  ASSERT_TRUE(WriteFileAtomic(path, "old\n", 0644, Backup::kNone).ok());
  ASSERT_EQ(::chown(path.c_str(), 4321, 8765), 0);
  ASSERT_TRUE(WriteFileAtomic(path, "new\n", 0644, Backup::kNone).ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 4321u);
  EXPECT_EQ(st.st_gid, 8765u);
  EXPECT_EQ(ReadFile(path).value(), "new\n");
}

TEST(FileIo, AtomicWriteWithoutBackupLeavesOnlyTheFile) {
  fs::path dir = FreshDir("atomic-no-backup");
  std::string path = (dir / "state").string();
  ASSERT_TRUE(WriteFileAtomic(path, "old\n", 0600, Backup::kNone).ok());
  ASSERT_TRUE(WriteFileAtomic(path, "new\n", 0640, Backup::kNone).ok());
  EXPECT_EQ(ReadFile(path).value(), "new\n");
  EXPECT_FALSE(fs::exists(path + ".bak"));
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);  // the mode the caller gave, not the replaced file's
}

TEST(FileIo, AtomicWriteIntoMissingDirectoryNamesThePathNotTheTemporaryFile) {
  absl::Status st = WriteFileAtomic("/nonexistent-dir/file", "x", 0644, Backup::kNone);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(st.message(), "/nonexistent-dir/file: cannot write: No such file or directory");
}

}  // namespace
}  // namespace gpunode::core
