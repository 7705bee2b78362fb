// The JSON-walking layer under the snapshot reader: null, wrong types and the messages they give.
#include "kube/json_walk.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/text.h"

namespace gpunode::kube {
namespace {

constexpr std::string_view kFix = "; expected what `kubectl get nodes,pods -A -o json` prints";

// Parses `json` (an object), and calls fn(walk, value) for each of its top-level fields, with a
// walk over a single Pod object read from "test.json".
class WalkTest : public ::testing::Test {
 protected:
  template <typename Fn>
  absl::Status Walk(std::string_view json, Fn&& fn) {
    padded_ = simdjson::padded_string(json);
    od::document doc;
    if (parser_.iterate(padded_).get(doc) != simdjson::SUCCESS) {
      return absl::InternalError("iterate");
    }
    JsonInput input("test.json", padded_.data());
    input.set_document(&doc);
    JsonWalk walk(input, where_);
    od::object obj;
    if (doc.get_object().get(obj) != simdjson::SUCCESS) return absl::InternalError("object");
    return walk.ForEachField(obj, "", [&](const FieldKey&, od::value& v) { return fn(walk, v); });
  }

  // Whether `view` points into the padded input (not a copy).
  bool InInput(std::string_view view) const {
    return view.data() >= padded_.data() &&
           view.data() + view.size() <= padded_.data() + padded_.size();
  }

  Where where_ = Where::Object("Pod");
  simdjson::padded_string padded_;
  od::parser parser_;
};

TEST_F(WalkTest, ForEachElementVisitsElementsInOrder) {
  std::vector<int64_t> seen;
  ASSERT_TRUE(Walk(R"({"v": [{"n": 1}, {"n": 2}]})", [&](const JsonWalk& walk, od::value& v) {
                return walk.ForEachElement(v, "spec.v", [&](od::value& element) {
                  return walk.ForEachField(element, "spec.v[]",
                                           [&](const FieldKey& key, od::value& n) {
                                             int64_t x = 0;
                                             EXPECT_TRUE(key == "n");
                                             RETURN_IF_ERROR(walk.ReadInt(n, "spec.v[].n", x));
                                             seen.push_back(x);
                                             return absl::OkStatus();
                                           });
                });
              }).ok());
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 2}));
}

TEST_F(WalkTest, NullArrayHasNoElementsAndNullObjectNoFields) {
  int calls = 0;
  absl::Status st = Walk(R"({"a": null, "b": null})", [&](const JsonWalk& walk, od::value& v) {
    return calls++ == 0 ? walk.ForEachElement(v, "spec.a",
                                              [&](od::value&) {
                                                ADD_FAILURE() << "element of null";
                                                return absl::OkStatus();
                                              })
                        : walk.ForEachField(v, "spec.b", [&](const FieldKey&, od::value&) {
                            ADD_FAILURE() << "field of null";
                            return absl::OkStatus();
                          });
  });
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(calls, 2);
}

TEST_F(WalkTest, NotAnArrayNamesTheField) {
  absl::Status st = Walk(R"({"v": {"x": 1}})", [&](const JsonWalk& walk, od::value& v) {
    return walk.ForEachElement(v, "spec.volumes", [](od::value&) { return absl::OkStatus(); });
  });
  EXPECT_TRUE(absl::IsInvalidArgument(st));
  EXPECT_EQ(st.message(),
            core::StrCat("test.json: Pod object: spec.volumes: expected an array", kFix));
}

TEST_F(WalkTest, NotAnObjectNamesTheField) {
  absl::Status st = Walk(R"({"v": [1]})", [&](const JsonWalk& walk, od::value& v) {
    return walk.ForEachField(v, "metadata",
                             [](const FieldKey&, od::value&) { return absl::OkStatus(); });
  });
  EXPECT_EQ(st.message(),
            core::StrCat("test.json: Pod object: metadata: expected an object", kFix));
}

TEST_F(WalkTest, ElementOfTheWrongTypeNamesWhatTheArrayHolds) {
  absl::Status st = Walk(R"({"v": ["a", 2]})", [&](const JsonWalk& walk, od::value& v) {
    std::vector<std::string_view> out;
    return walk.ReadStringArray(v, FieldPath("spec.x", "[].values"), out);
  });
  EXPECT_EQ(
      st.message(),
      core::StrCat("test.json: Pod object: spec.x[].values: expected an array of strings", kFix));
}

TEST_F(WalkTest, ReadStringKeepsPlainStringsInTheInputAndUnescapesOthers) {
  std::vector<std::string_view> got;
  ASSERT_TRUE(Walk(R"({"a": "plain", "b": "tab\there", "c": null})", [&](const JsonWalk& walk,
                                                                         od::value& v) {
                std::string_view s = "unchanged";
                RETURN_IF_ERROR(walk.ReadString(v, "f", s));
                got.push_back(s);
                return absl::OkStatus();
              }).ok());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "plain");
  EXPECT_TRUE(InInput(got[0]));
  EXPECT_EQ(got[1], "tab\there");
  EXPECT_FALSE(InInput(got[1]));
  EXPECT_EQ(got[2], "");  // null reads as empty
}

TEST_F(WalkTest, WrongScalarTypesSayWhatWasExpected) {
  struct Case {
    std::string json;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"({"v": 5})", "test.json: Pod object: f: expected a string"},
      {R"({"v": "yes"})", "test.json: Pod object: f: expected true or false"},
      {R"({"v": "5"})", "test.json: Pod object: f: expected an integer"},
      {R"({"v": {"k": 1}})", "test.json: Pod object: spec.m[k]: expected a string"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const int which = i++;
    absl::Status st = Walk(c.json, [&](const JsonWalk& walk, od::value& v) -> absl::Status {
      std::string_view s;
      bool b = false;
      int64_t n = 0;
      Labels m;
      switch (which) {
        case 0:
          return walk.ReadString(v, "f", s);
        case 1:
          return walk.ReadBool(v, "f", b);
        case 2:
          return walk.ReadInt(v, "f", n);
        default:
          return walk.ReadStringMap(v, "spec.m", m);
      }
    });
    EXPECT_EQ(st.message(), core::StrCat(c.message, kFix)) << c.json;
  }
}

TEST_F(WalkTest, NullScalarsLeaveTheValueUnlessRequired) {
  bool b = true;
  int64_t n = 6;
  EXPECT_TRUE(Walk(R"({"v": null})", [&](const JsonWalk& walk, od::value& v) {
                return walk.ReadBool(v, "f", b);
              }).ok());
  EXPECT_TRUE(b);
  EXPECT_TRUE(Walk(R"({"v": null})", [&](const JsonWalk& walk, od::value& v) {
                return walk.ReadInt(v, "f", n);
              }).ok());
  EXPECT_EQ(n, 6);
  absl::Status st = Walk(R"({"v": null})", [&](const JsonWalk& walk, od::value& v) {
    return walk.ReadRequiredInt(v, "status", n);
  });
  EXPECT_EQ(st.message(), core::StrCat("test.json: Pod object: status: expected an integer", kFix));
}

TEST_F(WalkTest, IsSetIsFalseOnlyForNull) {
  std::vector<bool> set;
  ASSERT_TRUE(Walk(R"({"a": null, "b": 0, "c": {}})", [&](const JsonWalk& walk, od::value& v) {
                bool s = false;
                RETURN_IF_ERROR(walk.IsSet(v, "f", "an integer", s));
                set.push_back(s);
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(set, (std::vector<bool>{false, true, true}));
}

TEST_F(WalkTest, NvidiaResourcesOnlyAndTheirAmounts) {
  ResourceList out;
  ASSERT_TRUE(Walk(R"({"v": {"cpu": "bad", "nvidia.com/gpu": "2", "nvidia\/com": "x",
                            "nvidia.com/mig-1g.10gb": 3}})",
                   [&](const JsonWalk& walk, od::value& v) {
                     return walk.ReadNvidiaResources(v, "status.capacity", out);
                   })
                  .ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "nvidia.com/gpu");
  EXPECT_EQ(out[0].milli, 2000);
  EXPECT_EQ(out[1].name, "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(out[1].milli, 3000);

  absl::Status st =
      Walk(R"({"v": {"nvidia.com/gpu": "-1"}})", [&](const JsonWalk& walk, od::value& v) {
        return walk.ReadNvidiaResources(v, "status.capacity", out);
      });
  EXPECT_EQ(st.message(),
            "test.json: Pod object: status.capacity[nvidia.com/gpu]: \"-1\" is "
            "negative; resource amounts cannot be");
}

TEST_F(WalkTest, ErrorsNameTheObjectOnceItsNameIsRead) {
  absl::Status st = Walk(R"({"v": 1})", [&](const JsonWalk& walk, od::value& v) {
    walk.where().ns = "team-a";
    walk.where().name = "trainer";
    std::string_view s;
    return walk.ReadString(v, FieldPath("spec.containers[0]", ".name"), s);
  });
  EXPECT_EQ(st.message(),
            core::StrCat(
                "test.json: pod team-a/trainer: spec.containers[0].name: expected a string", kFix));
}

TEST_F(WalkTest, BrokenJsonSaysWhereAndAsksWhetherTheFileIsComplete) {
  absl::Status st = Walk("{\"v\": {\n\"a\": [1, 2}}", [&](const JsonWalk& walk, od::value& v) {
    return walk.ForEachField(v, "spec", [&](const FieldKey&, od::value& a) {
      return walk.ForEachElement(
          a, "spec.a", [](od::value&) { return absl::OkStatus(); }, "an array",
          "an array of numbers");
    });
  });
  EXPECT_TRUE(absl::IsInvalidArgument(st));
  EXPECT_TRUE(core::View(st.message()).starts_with("test.json: not valid JSON (")) << st;
  EXPECT_TRUE(core::View(st.message()).ends_with(" in Pod object spec.a; is the file complete?"))
      << st;
}

TEST(Describe, NamesObjectsAsOperatorsDo) {
  Where w = Where::Item(3);
  EXPECT_EQ(Describe(w), "items[3] (item)");
  w.kind = "PodDisruptionBudget";
  EXPECT_EQ(Describe(w), "items[3] (PodDisruptionBudget)");
  w.name = "gpu-pdb";
  w.ns = "ml";
  EXPECT_EQ(Describe(w), "poddisruptionbudget ml/gpu-pdb");
  Where node = Where::Object("Node");
  node.name = "gpu-1";
  EXPECT_EQ(Describe(node), "node gpu-1");
  EXPECT_EQ(Describe(Where::Object("CronJob")), "CronJob object");
}

TEST(ParseRfc3339Seconds, ReadsWhatTheApiServerWritesAndOffsets) {
  EXPECT_EQ(ParseRfc3339Seconds("2024-05-01T10:00:00Z"), 1714557600);
  EXPECT_EQ(ParseRfc3339Seconds("2024-05-01T10:00:00.123456Z"), 1714557600);
  EXPECT_EQ(ParseRfc3339Seconds("2024-05-01T12:00:00+02:00"), 1714557600);
  EXPECT_EQ(ParseRfc3339Seconds("2024-05-01T08:30:00-01:30"), 1714557600);
  EXPECT_EQ(ParseRfc3339Seconds("yesterday"), 0);
  EXPECT_EQ(ParseRfc3339Seconds(""), 0);
}

}  // namespace
}  // namespace gpunode::kube
