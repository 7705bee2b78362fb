// The unified diff of --dry-run against GNU diff and patch: the same text where the change is
// unambiguous, and a patch that turns the one file into the other in every case.
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/line_diff.h"
#include "gtest/gtest.h"
#include "process.h"
#include "temp_dir.h"

namespace gpunode::core {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// What GNU diff prints for the same two texts.
std::string GnuDiff(const std::string& before, const std::string& after) {
  testing::TempDir dir("gpunode-diff");
  std::string a = dir.Write("a", before);
  std::string b = dir.Write("b", after);
  return testing::RunProcess({"/usr/bin/diff", "-u", "--label", "a", "--label", "b", a, b}).out;
}

// `before` patched with our diff.
std::string Patched(const std::string& before, const std::string& diff) {
  testing::TempDir dir("gpunode-patch");
  std::string a = dir.Write("a", before);
  std::string patch = dir.Write("diff", diff);
  testing::ProcessResult r =
      testing::RunProcess({"/usr/bin/patch", "--quiet", "-o", dir.path() + "/out", a, patch});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << diff;
  return Slurp(dir.path() + "/out");
}

std::string Numbered(int from, int to) {
  std::string text;
  for (int i = from; i <= to; ++i) text += "line " + std::to_string(i) + "\n";
  return text;
}

TEST(UnifiedDiff, EqualTextsHaveNoDiff) { EXPECT_EQ(UnifiedDiff("a\n", "a\n", "x", "y"), ""); }

TEST(UnifiedDiff, ReadsAsGnuDiffAndPatchesBack) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      // The import line gpunode adds under a version line.
      {"version = 2\n[plugins]\n  x = 1\n",
       "version = 2\nimports = [\"/etc/containerd/conf.d/99-nvidia.toml\"]\n[plugins]\n  x = 1\n"},
      // Two changes far apart: two hunks.
      {Numbered(1, 30),
       "line 0\n" + Numbered(1, 14) + "line 15 changed\n" + Numbered(16, 30) + "line 31\n"},
      // Changes close together: one hunk.
      {Numbered(1, 12), Numbered(1, 3) + "x\n" + Numbered(5, 8) + "y\n" + Numbered(10, 12)},
      // Everything removed; everything new.
      {Numbered(1, 3), ""},
      {"", Numbered(1, 3)},
      // A last line without its newline, gained and lost.
      {"a\nb", "a\nb\n"},
      {"a\nb\n", "a\nc"},
  };
  for (const auto& [before, after] : cases) {
    std::string ours = UnifiedDiff(before, after, "a", "b");
    EXPECT_EQ(ours, GnuDiff(before, after)) << before << "\n=>\n" << after;
    EXPECT_EQ(Patched(before, ours), after) << ours;
  }
}

// Past kMaxDiffLines the files are compared whole: one hunk, every line out and in, still a
// patch that turns the one into the other.
TEST(UnifiedDiff, LongFilesAreOneHunkThatStillPatches) {
  std::string before = Numbered(1, static_cast<int>(kMaxDiffLines) + 1);
  std::string after =
      Numbered(1, 10) + "changed\n" + Numbered(12, static_cast<int>(kMaxDiffLines) + 1);
  std::string ours = UnifiedDiff(before, after, "a", "b");
  std::string hunk = "@@ -1," + std::to_string(kMaxDiffLines + 1) + " +1," +
                     std::to_string(kMaxDiffLines + 1) + " @@\n";
  EXPECT_EQ(ours.find(hunk), ours.find("@@")) << ours.substr(0, 200);
  EXPECT_EQ(ours.find("@@", ours.find("@@") + hunk.size()), std::string::npos);
  EXPECT_EQ(Patched(before, ours), after);
}

}  // namespace
}  // namespace gpunode::core
