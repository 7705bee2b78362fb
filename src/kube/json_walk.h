// Walking one JSON document with simdjson's On-Demand API, for the snapshot reader's per-kind
// readers (node_reader, pod_reader, ...): iterate an object's fields or an array's elements, and
// read typed values, with every problem turned into one line that names the input, the object,
// the field and what to do.
//
// Contract:
// - Errors are absl::InvalidArgumentError with one line, in two forms:
//     "<source>: <object>: <field>: expected <what>; <fix>"   (a value of the wrong type)
//     "<source>: not valid JSON (<simdjson's words>) near line L (byte B) in <object> <field>;
//      is the file complete?"                                          (anything else)
//   where <object> is Describe(where): "pod ns/name" once the name is read, "items[3] (Pod)"
//   before it, "Pod object" for a single object, and <fix> is the JsonInput's: kFixInput for
//   snapshots, kFixApiAnswer (api_object.h) for what an API server answered. Fail() gives the
//   first form with free text.
// - JSON null counts as absent everywhere: a null object has no fields, a null array no
//   elements, a null scalar leaves the output as it was (ReadString clears it to empty).
// - Lifetime: every std::string_view read here points into the padded input buffer (strings
//   without escapes, numbers read as text) or into the parser's string buffer (unescaped
//   strings). Both stay valid only until the parser reads its next document; copy what is kept
//   into the snapshot's StringArena (view_copy.h) before that.
// - Field paths (FieldPath) are joined only when an error names them, so the walk allocates
//   nothing on the good path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/status_macros.h"
#include "kube/node_view.h"
#include "kube/resource_list.h"
#include "simdjson.h"

namespace gpunode::kube {

namespace od = simdjson::ondemand;

// The fix every snapshot input error ends with.
inline constexpr std::string_view kFixInput =
    "expected what `kubectl get nodes,pods -A -o json` prints";

// Where in the input an object sits, for error messages.
struct Where {
  std::string_view kind;  // Node, Pod, Job, Event, DaemonSet, Status, ...; "List" at the top
  size_t index = 0;       // position in items[], when in a list
  bool in_list = false;
  std::string_view ns;
  std::string_view name;

  static Where Object(std::string_view kind) {
    Where w;
    w.kind = kind;
    return w;
  }
  static Where Item(size_t index) {
    Where w = Object("item");
    w.index = index;
    w.in_list = true;
    return w;
  }
};

// "pod ns/name", "node name", "items[3] (Pod)" or "Pod object".
std::string Describe(const Where& w);

// A dotted field path in two parts, joined only when an error names it ("spec.containers[0]"
// and ".name").
struct FieldPath {
  FieldPath(const char* head) : head(head) {}         // NOLINT: paths are written as literals
  FieldPath(std::string_view head) : head(head) {}    // NOLINT
  FieldPath(const std::string& head) : head(head) {}  // NOLINT
  FieldPath(std::string_view head, std::string_view tail) : head(head), tail(tail) {}
  std::string Join() const;

  std::string_view head;
  std::string_view tail;
};

// An object field's key: compared raw (still escaped, no copy) with ==; Unescaped for its text.
class FieldKey {
 public:
  explicit FieldKey(od::field& f) : field_(&f), raw_(f.key()) {}
  bool operator==(std::string_view s) const { return raw_ == s; }
  const od::raw_json_string& raw() const { return raw_; }
  simdjson::error_code Unescaped(std::string_view& out) const {
    return field_->unescaped_key().get(out);
  }

 private:
  od::field* field_;
  od::raw_json_string raw_;
};

// Where a text handed to simdjson sits in the input it came from, so that errors give the
// input's line and byte: the offset and line of its first byte, and the stretches cut out of it
// (the items a ListStream handed out on their own), in order.
struct TextOrigin {
  struct Cut {
    size_t at = 0;       // offset in the text where the stretch was
    uint64_t bytes = 0;  // its length in the input
    uint64_t lines = 0;  // the newlines in it
  };
  uint64_t byte = 0;
  uint64_t line = 1;
  std::vector<Cut> cuts;
};

// The document being read: its name in errors, and where a parse error sits in it.
class JsonInput {
 public:
  // `origin`, when given, must outlive this; without it the text is the whole input. `fix` ends
  // every error about a value of the wrong type.
  JsonInput(std::string_view source, const char* begin, const TextOrigin* origin = nullptr,
            std::string_view fix = kFixInput)
      : source_(source), begin_(begin), origin_(origin), fix_(fix) {}
  // The document being iterated, for Location(); null when there is none.
  void set_document(od::document* doc) { doc_ = doc; }
  std::string_view source() const { return source_; }
  std::string_view fix() const { return fix_; }
  // " near line L (byte B)", or empty when simdjson cannot say.
  std::string Location() const;

 private:
  std::string_view source_;
  const char* begin_ = nullptr;
  const TextOrigin* origin_ = nullptr;
  std::string_view fix_;
  od::document* doc_ = nullptr;
};

// Walks the values of one object (one Where) of a JsonInput. The per-kind readers update
// where().name and where().ns as they read them, so later errors name the object.
class JsonWalk {
 public:
  JsonWalk(const JsonInput& input, Where& where) : input_(&input), where_(&where) {}

  const JsonInput& input() const { return *input_; }
  Where& where() const { return *where_; }

  // "<source>: <object>: <field>: <problem>".
  absl::Status Fail(const FieldPath& field, std::string_view problem) const;
  // The error for simdjson's code `e` reading `field`, which should hold `expected` ("a string").
  absl::Status FailJson(const FieldPath& field, std::string_view expected,
                        simdjson::error_code e) const;
  absl::Status Check(simdjson::error_code e, const FieldPath& field,
                     std::string_view expected) const {
    if (e == simdjson::SUCCESS) [[likely]] {
      return absl::OkStatus();
    }
    return FailJson(field, expected, e);
  }

  // Calls fn(FieldKey, od::value&) -> absl::Status for each field of an object; the first
  // error stops the walk. A null value has no fields.
  template <typename Fn>
  absl::Status ForEachField(od::value& value, const FieldPath& field, Fn&& fn) const {
    bool null = false;
    RETURN_IF_ERROR(IsNull(value, field, "an object", null));
    if (null) return absl::OkStatus();
    od::object obj;
    RETURN_IF_ERROR(Check(value.get_object().get(obj), field, "an object"));
    return ForEachField(obj, field, fn);
  }
  template <typename Fn>
  absl::Status ForEachField(od::object& obj, const FieldPath& field, Fn&& fn) const {
    for (auto field_result : obj) {
      od::field f;
      RETURN_IF_ERROR(Check(std::move(field_result).get(f), field, "an object"));
      RETURN_IF_ERROR(fn(FieldKey(f), f.value()));
    }
    return absl::OkStatus();
  }
  // The key's text, unescaped (valid as said above); `field` names the object in errors.
  absl::Status UnescapedKey(const FieldKey& key, const FieldPath& field,
                            std::string_view& out) const {
    return Check(key.Unescaped(out), field, "an object");
  }

  // Calls fn(element) -> absl::Status for each element of an array; a null value has none.
  // `expected_array` names the array when the value is something else, `expected_element`
  // what its elements should be.
  template <typename Fn>
  absl::Status ForEachElement(od::value& value, const FieldPath& field, Fn&& fn,
                              std::string_view expected_array = "an array",
                              std::string_view expected_element = "an array of objects") const {
    bool null = false;
    RETURN_IF_ERROR(IsNull(value, field, "an array", null));
    if (null) return absl::OkStatus();
    od::array arr;
    RETURN_IF_ERROR(Check(value.get_array().get(arr), field, expected_array));
    for (auto element_result : arr) {
      od::value element;
      // simdjson's get() is for an rvalue result: the move picks the overload.
      RETURN_IF_ERROR(
          Check(std::move(element_result).get(element),  // NOLINT(performance-move-const-arg)
                field, expected_element));
      RETURN_IF_ERROR(fn(element));
    }
    return absl::OkStatus();
  }

  // Whether the value is JSON null; `expected` names what it should be otherwise.
  absl::Status IsNull(od::value& value, const FieldPath& field, std::string_view expected,
                      bool& null) const;
  // Whether the field is set to something other than null (presence flags such as
  // activeDeadlineSeconds); the value itself is not read.
  absl::Status IsSet(od::value& value, const FieldPath& field, std::string_view expected,
                     bool& set) const {
    bool null = false;
    RETURN_IF_ERROR(IsNull(value, field, expected, null));
    set = !null;
    return absl::OkStatus();
  }

  // A string; null reads as empty. See the contract above for how long `out` lives.
  absl::Status ReadString(od::value& value, const FieldPath& field, std::string_view& out) const;
  // A string copied into `out` (null reads as empty), for what outlives the input.
  absl::Status ReadStringCopy(od::value& value, const FieldPath& field, std::string& out) const;
  // true or false; null leaves `out` as it was.
  absl::Status ReadBool(od::value& value, const FieldPath& field, bool& out) const;
  // An integer; null leaves `out` as it was.
  absl::Status ReadInt(od::value& value, const FieldPath& field, int64_t& out) const;
  // An integer; null is an error (fields the API server always writes as numbers).
  absl::Status ReadRequiredInt(od::value& value, const FieldPath& field, int64_t& out) const {
    return Check(value.get_int64().get(out), field, "an integer");
  }
  // An object of strings (labels, nodeSelector), appended to `out` in input order.
  absl::Status ReadStringMap(od::value& value, const FieldPath& field, Labels& out) const;
  // An array of strings, appended to `out`.
  absl::Status ReadStringArray(od::value& value, const FieldPath& field,
                               std::vector<std::string_view>& out) const;
  // A resource list (requests, limits, capacity): only NVIDIA resources are read, parsed as
  // quantities (strings, or numbers in hand-written files); negative amounts are errors.
  absl::Status ReadNvidiaResources(od::value& value, const FieldPath& field,
                                   ResourceList& out) const;

 private:
  const JsonInput* input_;
  Where* where_;
};

// "2024-05-01T10:00:00Z" (what the API server writes) to Unix seconds; 0 when unreadable.
int64_t ParseRfc3339Seconds(std::string_view s);

}  // namespace gpunode::kube
