// Splicing edits into TOML text: each shape an operator's file can have, and the bytes around the
// edit staying exactly as they were.
#include "runtime/toml_text_edit.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/imports_splice.h"

namespace gpunode::runtime {
namespace {

using ::testing::HasSubstr;

std::string Edit(const std::string& text, const containerd::TomlPath& path, const std::string& key,
                 const toml::node& value) {
  TomlTextEdit edit("test.toml", text);
  absl::Status st = edit.Set(path, key, value);
  EXPECT_TRUE(st.ok()) << st;
  absl::StatusOr<std::string> out = edit.Finish();
  EXPECT_TRUE(out.ok()) << out.status();
  return out.value_or("");
}

TEST(TomlTextEdit, InsertsRightUnderAnExplicitHeader) {
  std::string text = "[a] # keep\n  x = 1 # one\n\n[b]\ny = 2\n";
  EXPECT_EQ(Edit(text, {"a"}, "k", toml::value<std::string>("v")),
            "[a] # keep\nk = \"v\"\n  x = 1 # one\n\n[b]\ny = 2\n");
}

TEST(TomlTextEdit, ReplacesOnlyTheValue) {
  std::string text = "[a]\n  name = 'runc'   # the default\n";
  EXPECT_EQ(Edit(text, {"a"}, "name", toml::value<std::string>("nvidia")),
            "[a]\n  name = \"nvidia\"   # the default\n");
}

TEST(TomlTextEdit, EqualValueLeavesTheTextAlone) {
  std::string text = "[a]\nname = 'runc'\n";
  EXPECT_EQ(Edit(text, {"a"}, "name", toml::value<std::string>("runc")), text);
}

TEST(TomlTextEdit, GrowsAnArrayAfterItsLastElementKeepingTrailingCommaAndComments) {
  std::string text = "imports = [\n  \"/a.toml\", # first\n  \"/b.toml\",\n]\n[x]\n";
  toml::array wanted{"/a.toml", "/b.toml", "/c.toml"};
  EXPECT_EQ(Edit(text, {}, "imports", wanted),
            "imports = [\n  \"/a.toml\", # first\n  \"/b.toml\", \"/c.toml\",\n]\n[x]\n");
  EXPECT_EQ(Edit("imports = []\n", {}, "imports", toml::array{"/c.toml"}),
            "imports = [\"/c.toml\"]\n");
}

TEST(TomlTextEdit, RootKeyGoesAfterTheLastTopLevelValueBeforeAnyHeader) {
  EXPECT_EQ(Edit("# c\nversion = 2 # v\n\n[a]\nx = 1\n", {}, "imports", toml::array{"/d.toml"}),
            "# c\nversion = 2 # v\nimports = [ \"/d.toml\" ]\n\n[a]\nx = 1\n");
  EXPECT_EQ(Edit("# c\n[a]\nx = 1\n", {}, "k", toml::value<int64_t>(3)),
            "# c\nk = 3\n[a]\nx = 1\n");
  EXPECT_EQ(Edit("", {}, "version", toml::value<int64_t>(2)), "version = 2\n");
  EXPECT_EQ(Edit("x = 1", {}, "y", toml::value<int64_t>(2)), "x = 1\ny = 2\n");
}

TEST(TomlTextEdit, TableWithoutItsOwnHeaderGetsANewSectionAtTheEnd) {
  // [a] exists only implicitly, through [a.b]: TOML lets a later [a] header define it.
  std::string text = "[a.b]\nx = 1\n";
  std::string out = Edit(text, {"a"}, "k", toml::value<bool>(true));
  EXPECT_EQ(out, "[a.b]\nx = 1\n\n# Added by gpunode runtime configure.\n[a]\nk = true\n");
  out = Edit(text, {"a", "c", "d"}, "k", toml::value<bool>(true));
  EXPECT_THAT(out, HasSubstr("\n[a.c.d]\nk = true\n"));
}

TEST(TomlTextEdit, QuotesKeysThatAreNotBare) {
  std::string out =
      Edit("", {"plugins", "io.containerd.grpc.v1.cri"}, "enable_cdi", toml::value<bool>(true));
  EXPECT_THAT(out, HasSubstr("[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = true\n"));
}

TEST(TomlTextEdit, TablesAreComparedKeyByKey) {
  std::string text = "[r.runc]\ntype = 'x' # t\n[r.runc.options]\nA = 1\n";
  toml::table wanted{{"type", "x"}, {"options", toml::table{{"A", 1}, {"B", 2}}}};
  EXPECT_EQ(Edit(text, {"r"}, "runc", wanted),
            "[r.runc]\ntype = 'x' # t\n[r.runc.options]\nB = 2\nA = 1\n");
}

TEST(TomlTextEdit, RemovesAWholeKeyLine) {
  TomlTextEdit edit("t.toml", "[a]\n  x = 1 # gone\n  y = 2\n");
  ASSERT_TRUE(edit.Remove({"a"}, "x").ok());
  EXPECT_EQ(edit.Finish().value(), "[a]\n  y = 2\n");
}

TEST(TomlTextEdit, KeepsCrLfLineEndings) {
  EXPECT_EQ(Edit("[a]\r\nx = 1\r\n", {"a"}, "k", toml::value<int64_t>(2)),
            "[a]\r\nk = 2\r\nx = 1\r\n");
}

TEST(TomlTextEdit, CountsColumnsInCodePoints) {
  EXPECT_EQ(Edit("[a]\nn = \"é\" # ü\n", {"a"}, "n", toml::value<std::string>("x")),
            "[a]\nn = \"x\" # ü\n");
}

TEST(TomlTextEdit, RefusesShapesItCannotSplice) {
  TomlTextEdit dotted("t.toml", "[a]\nb.c = 1\n");
  EXPECT_TRUE(absl::IsUnimplemented(dotted.Set({"a", "b"}, "k", toml::value<int64_t>(1))));
  TomlTextEdit inline_table("t.toml", "a = { b = 1 }\n");
  EXPECT_TRUE(absl::IsUnimplemented(inline_table.Set({"a"}, "k", toml::value<int64_t>(1))));
  TomlTextEdit array_of_tables("t.toml", "[[a]]\nb = 1\n");
  EXPECT_TRUE(absl::IsUnimplemented(array_of_tables.Set({}, "a", toml::value<int64_t>(1))));
  TomlTextEdit shared_line("t.toml", "a = { b = 1 }\n");
  EXPECT_TRUE(absl::IsUnimplemented(shared_line.Remove({"a"}, "b")));
}

TEST(TomlTextEdit, ParseErrorNamesFileLineAndColumn) {
  TomlTextEdit edit("bad.toml", "a = 1\nb = \n");
  absl::Status st = edit.Set({}, "c", toml::value<int64_t>(1));
  EXPECT_TRUE(absl::IsInvalidArgument(st));
  EXPECT_THAT(std::string(st.message()), ::testing::StartsWith("bad.toml:2:"));
}

TEST(SpliceImport, BlankFileGetsVersionAndImports) {
  absl::StatusOr<containerd::ContainerdConfig> config =
      containerd::ParseContainerdConfig("/c.toml", "# nothing yet\n");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(SpliceImport(*config, "/d/99.toml").value(),
            "# nothing yet\nversion = 2\nimports = [ \"/d/99.toml\" ]\n");
}

TEST(SpliceImport, ImportsThatAreNotAnArrayOfStringsAreRefused) {
  absl::StatusOr<containerd::ContainerdConfig> config =
      containerd::ParseContainerdConfig("/c.toml", "imports = \"x\"\n");
  ASSERT_TRUE(config.ok());
  absl::StatusOr<std::string> out = SpliceImport(*config, "/d/99.toml");
  EXPECT_TRUE(absl::IsInvalidArgument(out.status()));
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("/c.toml:1:11: imports must be"));
}

}  // namespace
}  // namespace gpunode::runtime
