#include "kube/snapshot_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "kube/gpu_resources.h"
#include "kube/quantity.h"

namespace gpunode::kube {

using core::StrCat;
using core::View;

namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

constexpr std::string_view kFixInput = "expected what `kubectl get nodes,pods -A -o json` prints";

// Where in the input an object sits, for error messages.
struct Where {
  std::string_view kind;  // Node, Pod, PodDisruptionBudget
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

std::string Describe(const Where& w) {
  std::string kind = w.kind == "PodDisruptionBudget" ? "poddisruptionbudget"
                     : w.kind == "Node"              ? "node"
                     : w.kind == "Job"               ? "job"
                     : w.kind == "CronJob"           ? "cronjob"
                     : w.kind == "Event"             ? "event"
                                                     : "pod";
  if (!w.name.empty()) {
    return w.ns.empty() ? StrCat(kind, " ", w.name) : StrCat(kind, " ", w.ns, "/", w.name);
  }
  if (w.in_list) return StrCat("items[", w.index, "] (", w.kind, ")");
  return StrCat(w.kind, " object");
}

// Reads a JSON string without copying when it holds no escapes (almost always), so the view
// points into the input; escaped strings are unescaped into the parser's buffer. Both stay valid
// until the parser reads the next document. JSON null reads as the empty string.
error_code ReadString(od::value& v, std::string_view& out) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type == od::json_type::null) {
    out = {};
    return simdjson::SUCCESS;
  }
  if (type != od::json_type::string) return simdjson::INCORRECT_TYPE;
  std::string_view raw;
  raw = v.raw_json_token();
  while (!raw.empty() &&
         (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t')) {
    raw.remove_suffix(1);
  }
  if (raw.size() >= 2 && raw.back() == '"') {
    std::string_view inner = raw.substr(1, raw.size() - 2);
    if (inner.find('\\') == std::string_view::npos) {
      out = inner;
      return simdjson::SUCCESS;
    }
  }
  return v.get_string().get(out);
}

// Quantities are JSON strings in API output; hand-written files sometimes use numbers.
error_code ReadQuantityText(od::value& v, std::string_view& out) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type == od::json_type::number) {
    std::string_view raw;
    raw = v.raw_json_token();
    while (!raw.empty() &&
           (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t')) {
      raw.remove_suffix(1);
    }
    out = raw;
    return simdjson::SUCCESS;
  }
  if (type != od::json_type::string) return simdjson::INCORRECT_TYPE;
  return ReadString(v, out);
}

// Treats JSON null as an absent object or array, as Go's encoding does.
error_code IsNull(od::value& v, bool& null) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  null = type == od::json_type::null;
  return simdjson::SUCCESS;
}

// A fast filter on the raw (still escaped) key: "nvidia.com" without the slash, which JSON
// writers may escape as \/. The caller confirms the prefix on the unescaped key.
bool KeyStartsWithNvidia(const od::raw_json_string& key) {
  constexpr std::string_view kDomain = "nvidia.com";
  // The input is padded, so comparing past a shorter key reads the closing quote and beyond,
  // which simply mismatches.
  return std::memcmp(key.raw(), kDomain.data(), kDomain.size()) == 0;
}

// "2024-05-01T10:00:00Z" (what the API server writes) to Unix seconds; 0 when unreadable.
int64_t ParseRfc3339Seconds(std::string_view s) {
  auto num = [&](size_t pos, size_t len, int& out) {
    if (pos + len > s.size()) return false;
    out = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      out = out * 10 + (s[i] - '0');
    }
    return true;
  };
  int y, mo, d, h, mi, sec;
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
      s[13] != ':' || s[16] != ':' || !num(0, 4, y) || !num(5, 2, mo) || !num(8, 2, d) ||
      !num(11, 2, h) || !num(14, 2, mi) || !num(17, 2, sec)) {
    return 0;
  }
  absl::Time t = absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, sec), absl::UTCTimeZone());
  std::string_view zone = s.substr(19);
  while (!zone.empty() && (zone.front() == '.' || (zone.front() >= '0' && zone.front() <= '9'))) {
    zone.remove_prefix(1);
  }
  int zh = 0, zm = 0;
  if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && num(s.size() - 5, 2, zh) &&
      num(s.size() - 2, 2, zm)) {
    absl::Duration offset = absl::Hours(zh) + absl::Minutes(zm);
    t = zone[0] == '+' ? t - offset : t + offset;
  }
  return absl::ToUnixSeconds(t);
}

// Internal signal from ParseItem to Add: an item has no kind and the list's kind is not known yet.
absl::Status NeedListKind() { return absl::FailedPreconditionError("gpunode:need-list-kind"); }
bool IsNeedListKind(const absl::Status& st) {
  return absl::IsFailedPrecondition(st) && st.message() == "gpunode:need-list-kind";
}

std::string_view ItemKindOf(std::string_view list_kind) {
  if (list_kind == "NodeList") return "Node";
  if (list_kind == "PodList") return "Pod";
  if (list_kind == "PodDisruptionBudgetList") return "PodDisruptionBudget";
  if (list_kind == "JobList") return "Job";
  if (list_kind == "CronJobList") return "CronJob";
  if (list_kind == "EventList") return "Event";
  return {};
}

bool IsKeptKind(std::string_view kind) {
  return kind == "Node" || kind == "Pod" || kind == "PodDisruptionBudget" || kind == "Job" ||
         kind == "CronJob" || kind == "Event";
}

}  // namespace

#define GN_JSON(expr, w, field, expected)                  \
  do {                                                     \
    if (error_code _e = (expr); _e != simdjson::SUCCESS) { \
      return FailJson((w), (field), (expected), _e);       \
    }                                                      \
  } while (0)

class SnapshotBuilder::Impl {
 public:
  explicit Impl(ReadOptions options) : options_(std::move(options)) {}

  absl::Status Add(simdjson::padded_string_view json, std::string_view source,
                   std::string* continue_token);
  ClusterSnapshot Take() { return std::exchange(snap_, ClusterSnapshot{}); }

 private:
  // One line: source, object, field, problem and (via the problem text) what to do.
  absl::Status Fail(const Where& w, std::string_view field, std::string_view problem) const {
    return absl::InvalidArgumentError(
        StrCat(source_, ": ", Describe(w), ": ", field, ": ", problem));
  }
  absl::Status FailJson(const Where& w, std::string_view field, std::string_view expected,
                        error_code e) const;
  std::string Location() const;

  // Calls fn(field, raw key, value) for each field of an object value; JSON null has none.
  template <typename Fn>
  absl::Status ForEachField(od::value& value, const Where& w, std::string_view field, Fn&& fn) {
    bool null = false;
    GN_JSON(IsNull(value, null), w, field, "an object");
    if (null) return absl::OkStatus();
    od::object obj;
    GN_JSON(value.get_object().get(obj), w, field, "an object");
    for (auto field_result : obj) {
      od::field f;
      GN_JSON(std::move(field_result).get(f), w, field, "an object");
      od::raw_json_string key = f.key();
      RETURN_IF_ERROR(fn(f, key, f.value()));
    }
    return absl::OkStatus();
  }

  // The controller among metadata.ownerReferences (value `val`): its kind and name, and whether
  // there is one. JSON null has none.
  absl::Status ReadControllerOwner(od::value& val, const Where& w, std::string_view& owner_kind,
                                   std::string_view& owner_name, bool& found) {
    bool null = false;
    GN_JSON(IsNull(val, null), w, "metadata.ownerReferences", "an array");
    if (null) return absl::OkStatus();
    od::array refs;
    GN_JSON(val.get_array().get(refs), w, "metadata.ownerReferences", "an array");
    for (auto ref_result : refs) {
      od::value ref;
      GN_JSON(std::move(ref_result).get(ref), w, "metadata.ownerReferences", "an array of objects");
      std::string_view kind, name;
      bool controller = false;
      RETURN_IF_ERROR(ForEachField(
          ref, w, "metadata.ownerReferences[]",
          [&](od::field&, const od::raw_json_string& key, od::value& field) -> absl::Status {
            if (key == "kind") {
              GN_JSON(ReadString(field, kind), w, "metadata.ownerReferences[].kind", "a string");
            } else if (key == "name") {
              GN_JSON(ReadString(field, name), w, "metadata.ownerReferences[].name", "a string");
            } else if (key == "controller") {
              bool null_flag = false;
              GN_JSON(IsNull(field, null_flag), w, "metadata.ownerReferences[].controller",
                      "true or false");
              if (!null_flag) {
                GN_JSON(field.get_bool().get(controller), w,
                        "metadata.ownerReferences[].controller", "true or false");
              }
            }
            return absl::OkStatus();
          }));
      if (controller) {
        found = true;
        owner_kind = kind;
        owner_name = name;
      }
    }
    return absl::OkStatus();
  }

  absl::Status ReadTopLevel(od::object& top, std::string_view& kind, std::string_view& api_version,
                            bool& saw_items, std::string* continue_token);
  absl::Status ParseItem(od::value& item, size_t index, std::string_view list_kind);
  absl::Status ParseObject(od::object& obj, Where& w);

  absl::Status ParseNode(od::object& obj, Where& w);
  absl::Status ParsePod(od::object& obj, Where& w);
  absl::Status ParsePdb(od::object& obj, Where& w);
  absl::Status ParseJob(od::object& obj, Where& w);
  absl::Status ParseJobSpec(od::value& v, const Where& w, std::string_view path);
  absl::Status ParseEvent(od::object& obj, Where& w);

  absl::Status ParseStringMap(od::value& v, Labels& out, const Where& w, std::string_view field);
  absl::Status ParseResources(od::value& v, ResourceList& out, const Where& w,
                              std::string_view field);
  absl::Status ParseStringArray(od::value& v, std::vector<std::string_view>& out, const Where& w,
                                std::string_view field);
  absl::Status ParseContainers(od::value& v, bool init, const Where& w,
                               std::string_view spec_path = "spec");
  absl::Status ParseTolerations(od::value& v, const Where& w);
  absl::Status ParseAffinity(od::value& v, const Where& w);
  absl::Status ParseRequirements(od::value& v, std::vector<NodeSelectorRequirement>& out,
                                 const Where& w, std::string_view field);
  absl::Status ParseLabelSelector(od::value& v, LabelSelector& out, const Where& w);

  void CommitNode();
  void CommitPod();
  Labels CopyLabels(const Labels& in);
  ResourceList CopyResources(const ResourceList& in);
  std::vector<std::string_view> CopyStrings(const std::vector<std::string_view>& in);

  ReadOptions options_;
  od::parser parser_;
  ClusterSnapshot snap_;

  // Per document.
  std::string_view source_;
  const char* input_begin_ = nullptr;
  od::document* doc_ = nullptr;

  // Scratch objects reused across items; their strings point into the current document until
  // Commit* copies what is kept into the snapshot's arena.
  NodeView node_;
  PodView pod_;
  PodDetails details_;
  bool want_details_ = false;
  PdbView pdb_;
  JobView job_;
};

absl::Status SnapshotBuilder::Impl::FailJson(const Where& w, std::string_view field,
                                             std::string_view expected, error_code e) const {
  if (e == simdjson::INCORRECT_TYPE) {
    return Fail(w, field, StrCat("expected ", expected, "; ", kFixInput));
  }
  std::string context;
  if (w.kind != "List") context = StrCat(" in ", Describe(w), field.empty() ? "" : " ", field);
  return absl::InvalidArgumentError(StrCat(source_, ": not valid JSON (",
                                           simdjson::error_message(e), ")", Location(), context,
                                           "; is the file complete?"));
}

std::string SnapshotBuilder::Impl::Location() const {
  if (doc_ == nullptr || input_begin_ == nullptr) return "";
  const char* loc = nullptr;
  if (doc_->current_location().get(loc) != simdjson::SUCCESS || loc == nullptr) return "";
  size_t offset = static_cast<size_t>(loc - input_begin_);
  if (offset == 0) return "";  // simdjson points at the start when the document is truncated
  size_t line = 1 + static_cast<size_t>(std::count(input_begin_, loc, '\n'));
  return StrCat(" near line ", line, " (byte ", offset, ")");
}

absl::Status SnapshotBuilder::Impl::Add(simdjson::padded_string_view json, std::string_view source,
                                        std::string* continue_token) {
  if (continue_token) continue_token->clear();
  source_ = source;
  input_begin_ = json.data();
  doc_ = nullptr;
  Where top_where = Where::Object("List");
  od::document doc;
  if (error_code e = parser_.iterate(json).get(doc)) {
    return absl::InvalidArgumentError(
        StrCat(source, ": cannot parse JSON (", simdjson::error_message(e), "); ", kFixInput));
  }
  doc_ = &doc;
  od::object top;
  if (error_code e = doc.get_object().get(top)) {
    if (e == simdjson::INCORRECT_TYPE) {
      return absl::InvalidArgumentError(
          StrCat(source, ": not a JSON object; ", kFixInput, " (a v1 List)"));
    }
    return FailJson(top_where, "", "an object", e);
  }
  std::string_view kind;
  std::string_view api_version;
  bool saw_items = false;
  const size_t nodes_before = snap_.nodes.size();
  const size_t pods_before = snap_.pods.size();
  const size_t pdbs_before = snap_.pdbs.size();
  const size_t jobs_before = snap_.jobs.size();
  const size_t pulls_before = snap_.image_pulls.size();
  // Items without a kind take it from the list's kind. When a writer sorted the keys, that kind
  // comes after the items: find it, forget what the first pass kept, and read again.
  for (bool kind_known_up_front = false;; kind_known_up_front = true) {
    absl::Status st = ReadTopLevel(top, kind, api_version, saw_items, continue_token);
    if (!IsNeedListKind(st) || kind_known_up_front) {
      if (!st.ok()) return st;
      break;
    }
    snap_.nodes.resize(nodes_before);
    snap_.pods.resize(pods_before);
    snap_.pdbs.resize(pdbs_before);
    snap_.jobs.resize(jobs_before);
    snap_.image_pulls.resize(pulls_before);
    GN_JSON(top.reset().error(), top_where, "", "an object");
    od::value kind_value;
    if (top.find_field_unordered("kind").get(kind_value) != simdjson::SUCCESS ||
        ReadString(kind_value, kind) != simdjson::SUCCESS || ItemKindOf(kind).empty()) {
      return Fail(Where::Item(0), "kind",
                  StrCat("missing, and the list's kind does not say it; ", kFixInput));
    }
    GN_JSON(top.reset().error(), top_where, "", "an object");
  }
  if (saw_items) {
    bool known = kind == "List" || !ItemKindOf(kind).empty();
    if (!known) {
      return absl::InvalidArgumentError(
          StrCat(source, ": kind is \"", kind, "\", not a v1 List; ", kFixInput));
    }
    if (kind == "List" && api_version != "v1") {
      return absl::InvalidArgumentError(
          StrCat(source, ": apiVersion is \"", api_version, "\", not v1; ", kFixInput));
    }
    if (kind == "PodDisruptionBudgetList") snap_.has_pdbs = true;
  } else if (IsKeptKind(kind)) {
    // A single object, as `kubectl get pod NAME -o json` prints it.
    Where w = Where::Object(kind);
    GN_JSON(top.reset().error(), w, "", "an object");
    if (absl::Status st = ParseObject(top, w); !st.ok()) return st;
  } else {
    return absl::InvalidArgumentError(
        StrCat(source, ": not a v1 List (kind \"", kind, "\", no items); ", kFixInput));
  }
  if (const char* trailing = nullptr; doc.current_location().get(trailing) == simdjson::SUCCESS) {
    return absl::InvalidArgumentError(StrCat(source, ": unexpected content after the JSON document",
                                             Location(), "; give one document per file"));
  }
  doc_ = nullptr;
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ReadTopLevel(od::object& top, std::string_view& kind,
                                                 std::string_view& api_version, bool& saw_items,
                                                 std::string* continue_token) {
  Where top_where = Where::Object("List");
  for (auto field_result : top) {
    od::field f;
    if (error_code e = std::move(field_result).get(f))
      return FailJson(top_where, "", "an object", e);
    od::raw_json_string key = f.key();
    od::value& val = f.value();
    if (key == "kind") {
      GN_JSON(ReadString(val, kind), top_where, "kind", "a string");
    } else if (key == "apiVersion") {
      GN_JSON(ReadString(val, api_version), top_where, "apiVersion", "a string");
    } else if (key == "metadata" && continue_token) {
      // A list's metadata carries the continue token. Only that field is read, so a single
      // object's metadata is left for the second pass below.
      RETURN_IF_ERROR(ForEachField(
          val, top_where, "metadata",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "continue") {
              std::string_view token;
              GN_JSON(ReadString(val, token), top_where, "metadata.continue", "a string");
              continue_token->assign(token);
            }
            return absl::OkStatus();
          }));
    } else if (key == "items") {
      saw_items = true;
      bool null = false;
      GN_JSON(IsNull(val, null), top_where, "items", "an array");
      if (null) continue;
      od::array items;
      GN_JSON(val.get_array().get(items), top_where, "items", "an array");
      size_t index = 0;
      for (auto item_result : items) {
        od::value item;
        if (error_code e = std::move(item_result).get(item)) {
          Where w = Where::Item(index);
          return FailJson(w, "", "an object", e);
        }
        RETURN_IF_ERROR(ParseItem(item, index, kind));
        ++index;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ParseItem(od::value& item, size_t index,
                                              std::string_view list_kind) {
  Where w = Where::Item(index);
  od::object obj;
  GN_JSON(item.get_object().get(obj), w, "", "an object");
  // Find the kind first wherever it sits (kubectl and the API server both put it before
  // metadata, so this is cheap), then rewind and read the object in one pass.
  std::string_view kind;
  od::value kind_value;
  error_code e = obj.find_field_unordered("kind").get(kind_value);
  if (e == simdjson::SUCCESS) {
    GN_JSON(ReadString(kind_value, kind), w, "kind", "a string");
  } else if (e == simdjson::NO_SUCH_FIELD) {
    kind = ItemKindOf(list_kind);
    if (kind.empty()) return NeedListKind();
  } else {
    return FailJson(w, "kind", "a string", e);
  }
  if (!IsKeptKind(kind)) {
    return absl::OkStatus();  // other kinds (Services, Deployments, ...) do not matter here
  }
  w.kind = kind;
  GN_JSON(obj.reset().error(), w, "", "an object");
  return ParseObject(obj, w);
}

absl::Status SnapshotBuilder::Impl::ParseObject(od::object& obj, Where& w) {
  if (w.kind == "Node") return ParseNode(obj, w);
  if (w.kind == "Pod") return ParsePod(obj, w);
  if (w.kind == "Job" || w.kind == "CronJob") return ParseJob(obj, w);
  if (w.kind == "Event") return ParseEvent(obj, w);
  return ParsePdb(obj, w);
}

absl::Status SnapshotBuilder::Impl::ParseStringMap(od::value& v, Labels& out, const Where& w,
                                                   std::string_view field) {
  RETURN_IF_ERROR(ForEachField(
      v, w, field, [&](od::field& f, const od::raw_json_string&, od::value& val) -> absl::Status {
        std::string_view k, value;
        GN_JSON(f.unescaped_key().get(k), w, field, "an object");
        GN_JSON(ReadString(val, value), w, StrCat(field, "[", k, "]"), "a string");
        out.emplace_back(k, value);
        return absl::OkStatus();
      }));
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ParseStringArray(od::value& v,
                                                     std::vector<std::string_view>& out,
                                                     const Where& w, std::string_view field) {
  bool null = false;
  GN_JSON(IsNull(v, null), w, field, "an array");
  if (null) return absl::OkStatus();
  od::array arr;
  GN_JSON(v.get_array().get(arr), w, field, "an array of strings");
  for (auto el_result : arr) {
    od::value el;
    GN_JSON(std::move(el_result).get(el), w, field, "an array of strings");
    std::string_view s;
    GN_JSON(ReadString(el, s), w, field, "an array of strings");
    out.push_back(s);
  }
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ParseResources(od::value& v, ResourceList& out, const Where& w,
                                                   std::string_view field) {
  RETURN_IF_ERROR(ForEachField(
      v, w, field,
      [&](od::field& f, const od::raw_json_string& key, od::value& val) -> absl::Status {
        if (!KeyStartsWithNvidia(key))
          return absl::OkStatus();  // cpu, memory, ...: not parsed at all
        std::string_view name;
        GN_JSON(f.unescaped_key().get(name), w, field, "an object");
        if (!IsNvidiaResource(name)) return absl::OkStatus();
        std::string_view text;
        GN_JSON(ReadQuantityText(val, text), w, StrCat(field, "[", name, "]"),
                "a quantity string such as \"1\"");
        absl::StatusOr<int64_t> milli = ParseQuantityMilli(text);
        if (!milli.ok())
          return Fail(w, StrCat(field, "[", name, "]"), View(milli.status().message()));
        if (*milli < 0) {
          return Fail(w, StrCat(field, "[", name, "]"),
                      StrCat("\"", text, "\" is negative; resource amounts cannot be"));
        }
        out.push_back({name, *milli, text});
        return absl::OkStatus();
      }));
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ParseNode(od::object& obj, Where& w) {
  node_.name = {};
  node_.labels.clear();
  node_.taints.clear();
  node_.unschedulable = false;
  node_.ready = ConditionStatus::kUnknown;
  node_.capacity.clear();
  node_.allocatable.clear();
  node_.drain_started_at = {};
  node_.gpunode_annotations.clear();
  for (auto field_result : obj) {
    od::field f;
    GN_JSON(std::move(field_result).get(f), w, "", "an object");
    od::raw_json_string key = f.key();
    od::value& val = f.value();
    if (key == "metadata") {
      RETURN_IF_ERROR(ForEachField(
          val, w, "metadata",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "name") {
              GN_JSON(ReadString(val, node_.name), w, "metadata.name", "a string");
              w.name = node_.name;
            } else if (key == "labels") {
              RETURN_IF_ERROR(ParseStringMap(val, node_.labels, w, "metadata.labels"));
            } else if (key == "annotations") {
              RETURN_IF_ERROR(ForEachField(
                  val, w, "metadata.annotations",
                  [&](od::field& f, const od::raw_json_string& key,
                      od::value& val) -> absl::Status {
                    if (key == kDrainStartedAnnotation) {
                      GN_JSON(ReadString(val, node_.drain_started_at), w, "metadata.annotations",
                              "a string");
                      return absl::OkStatus();
                    }
                    std::string_view k, value;
                    GN_JSON(f.unescaped_key().get(k), w, "metadata.annotations", "an object");
                    if (k.starts_with(kGpunodeAnnotationPrefix)) {
                      GN_JSON(ReadString(val, value), w, StrCat("metadata.annotations[", k, "]"),
                              "a string");
                      node_.gpunode_annotations.emplace_back(k, value);
                    }
                    return absl::OkStatus();
                  }));
            }
            return absl::OkStatus();
          }));
    } else if (key == "spec") {
      RETURN_IF_ERROR(ForEachField(
          val, w, "spec",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "unschedulable") {
              bool null = false;
              GN_JSON(IsNull(val, null), w, "spec.unschedulable", "true or false");
              if (!null)
                GN_JSON(val.get_bool().get(node_.unschedulable), w, "spec.unschedulable",
                        "true or false");
            } else if (key == "taints") {
              bool null = false;
              GN_JSON(IsNull(val, null), w, "spec.taints", "an array");
              if (null) return absl::OkStatus();
              od::array taints;
              GN_JSON(val.get_array().get(taints), w, "spec.taints", "an array");
              for (auto taint_result : taints) {
                od::value t;
                GN_JSON(std::move(taint_result).get(t), w, "spec.taints", "an array of objects");
                Taint taint;
                RETURN_IF_ERROR(ForEachField(
                    t, w, "spec.taints[]",
                    [&](od::field&, const od::raw_json_string& key,
                        od::value& val) -> absl::Status {
                      if (key == "key") {
                        GN_JSON(ReadString(val, taint.key), w, "spec.taints[].key", "a string");
                      } else if (key == "value") {
                        GN_JSON(ReadString(val, taint.value), w, "spec.taints[].value", "a string");
                      } else if (key == "effect") {
                        GN_JSON(ReadString(val, taint.effect), w, "spec.taints[].effect",
                                "a string");
                      }
                      return absl::OkStatus();
                    }));
                node_.taints.push_back(taint);
              }
            }
            return absl::OkStatus();
          }));
    } else if (key == "status") {
      RETURN_IF_ERROR(ForEachField(
          val, w, "status",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "capacity") {
              RETURN_IF_ERROR(ParseResources(val, node_.capacity, w, "status.capacity"));
            } else if (key == "allocatable") {
              RETURN_IF_ERROR(ParseResources(val, node_.allocatable, w, "status.allocatable"));
            } else if (key == "conditions") {
              bool null = false;
              GN_JSON(IsNull(val, null), w, "status.conditions", "an array");
              if (null) return absl::OkStatus();
              od::array conditions;
              GN_JSON(val.get_array().get(conditions), w, "status.conditions", "an array");
              for (auto cond_result : conditions) {
                od::value c;
                GN_JSON(std::move(cond_result).get(c), w, "status.conditions",
                        "an array of objects");
                std::string_view type, status;
                RETURN_IF_ERROR(ForEachField(c, w, "status.conditions[]",
                                             [&](od::field&, const od::raw_json_string& key,
                                                 od::value& val) -> absl::Status {
                                               if (key == "type") {
                                                 GN_JSON(ReadString(val, type), w,
                                                         "status.conditions[].type", "a string");
                                               } else if (key == "status") {
                                                 GN_JSON(ReadString(val, status), w,
                                                         "status.conditions[].status", "a string");
                                               }
                                               return absl::OkStatus();
                                             }));
                if (type == "Ready") {
                  node_.ready = status == "True"    ? ConditionStatus::kTrue
                                : status == "False" ? ConditionStatus::kFalse
                                                    : ConditionStatus::kUnknown;
                }
              }
            }
            return absl::OkStatus();
          }));
    }
  }
  if (node_.name.empty()) {
    return Fail(w, "metadata.name", StrCat("missing; every node has a name; ", kFixInput));
  }
  CommitNode();
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ParseContainers(od::value& v, bool init, const Where& w,
                                                    std::string_view spec_path) {
  std::string list = StrCat(spec_path, init ? ".initContainers" : ".containers");
  bool null = false;
  GN_JSON(IsNull(v, null), w, list, "an array");
  if (null) return absl::OkStatus();
  od::array arr;
  GN_JSON(v.get_array().get(arr), w, list, "an array");
  size_t i = 0;
  for (auto c_result : arr) {
    od::value c;
    GN_JSON(std::move(c_result).get(c), w, list, "an array of containers");
    ContainerResources cr;
    cr.init = init;
    std::string field = StrCat(list, "[", i, "]");
    RETURN_IF_ERROR(ForEachField(
        c, w, field,
        [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
          if (key == "name") {
            GN_JSON(ReadString(val, cr.name), w, StrCat(field, ".name"), "a string");
          } else if (key == "restartPolicy") {
            std::string_view policy;
            GN_JSON(ReadString(val, policy), w, StrCat(field, ".restartPolicy"), "a string");
            cr.sidecar = init && policy == "Always";
          } else if (key == "resources") {
            RETURN_IF_ERROR(ForEachField(
                val, w, StrCat(field, ".resources"),
                [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
                  if (key == "requests") {
                    RETURN_IF_ERROR(
                        ParseResources(val, cr.requests, w, StrCat(field, ".resources.requests")));
                  } else if (key == "limits") {
                    RETURN_IF_ERROR(
                        ParseResources(val, cr.limits, w, StrCat(field, ".resources.limits")));
                  }
                  return absl::OkStatus();
                }));
          }
          return absl::OkStatus();
        }));
    details_.containers.push_back(std::move(cr));
    ++i;
  }
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ParseTolerations(od::value& v, const Where& w) {
  bool null = false;
  GN_JSON(IsNull(v, null), w, "spec.tolerations", "an array");
  if (null) return absl::OkStatus();
  details_.tolerations_present = true;
  od::array arr;
  GN_JSON(v.get_array().get(arr), w, "spec.tolerations", "an array");
  for (auto t_result : arr) {
    od::value t;
    GN_JSON(std::move(t_result).get(t), w, "spec.tolerations", "an array of objects");
    Toleration tol;
    RETURN_IF_ERROR(ForEachField(
        t, w, "spec.tolerations[]",
        [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
          if (key == "key") {
            GN_JSON(ReadString(val, tol.key), w, "spec.tolerations[].key", "a string");
          } else if (key == "operator") {
            GN_JSON(ReadString(val, tol.op), w, "spec.tolerations[].operator", "a string");
          } else if (key == "value") {
            GN_JSON(ReadString(val, tol.value), w, "spec.tolerations[].value", "a string");
          } else if (key == "effect") {
            GN_JSON(ReadString(val, tol.effect), w, "spec.tolerations[].effect", "a string");
          } else if (key == "tolerationSeconds") {
            bool is_null = false;
            GN_JSON(IsNull(val, is_null), w, "spec.tolerations[].tolerationSeconds", "a number");
            tol.has_seconds = !is_null;
          }
          return absl::OkStatus();
        }));
    details_.tolerations.push_back(tol);
  }
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ParseRequirements(od::value& v,
                                                      std::vector<NodeSelectorRequirement>& out,
                                                      const Where& w, std::string_view field) {
  bool null = false;
  GN_JSON(IsNull(v, null), w, field, "an array");
  if (null) return absl::OkStatus();
  od::array arr;
  GN_JSON(v.get_array().get(arr), w, field, "an array");
  for (auto r_result : arr) {
    od::value r;
    GN_JSON(std::move(r_result).get(r), w, field, "an array of objects");
    NodeSelectorRequirement req;
    RETURN_IF_ERROR(ForEachField(
        r, w, field,
        [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
          if (key == "key") {
            GN_JSON(ReadString(val, req.key), w, StrCat(field, "[].key"), "a string");
          } else if (key == "operator") {
            GN_JSON(ReadString(val, req.op), w, StrCat(field, "[].operator"), "a string");
          } else if (key == "values") {
            RETURN_IF_ERROR(ParseStringArray(val, req.values, w, StrCat(field, "[].values")));
          }
          return absl::OkStatus();
        }));
    out.push_back(std::move(req));
  }
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ParseAffinity(od::value& v, const Where& w) {
  RETURN_IF_ERROR(ForEachField(
      v, w, "spec.affinity",
      [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
        if (key == "nodeAffinity") {
          RETURN_IF_ERROR(ForEachField(
              val, w, "spec.affinity.nodeAffinity",
              [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
                if (key != "requiredDuringSchedulingIgnoredDuringExecution")
                  return absl::OkStatus();
                bool null = false;
                GN_JSON(IsNull(val, null), w, "spec.affinity.nodeAffinity.required", "an object");
                if (null) return absl::OkStatus();
                details_.has_required_node_affinity = true;
                RETURN_IF_ERROR(ForEachField(
                    val, w, "spec.affinity.nodeAffinity.required",
                    [&](od::field&, const od::raw_json_string& key,
                        od::value& val) -> absl::Status {
                      if (key != "nodeSelectorTerms") return absl::OkStatus();
                      bool terms_null = false;
                      GN_JSON(IsNull(val, terms_null), w, "nodeSelectorTerms", "an array");
                      if (terms_null) return absl::OkStatus();
                      od::array terms;
                      GN_JSON(val.get_array().get(terms), w, "nodeSelectorTerms", "an array");
                      for (auto term_result : terms) {
                        od::value term_value;
                        GN_JSON(std::move(term_result).get(term_value), w, "nodeSelectorTerms",
                                "an array of objects");
                        NodeSelectorTerm term;
                        RETURN_IF_ERROR(ForEachField(
                            term_value, w, "nodeSelectorTerms[]",
                            [&](od::field&, const od::raw_json_string& key,
                                od::value& val) -> absl::Status {
                              if (key == "matchExpressions") {
                                RETURN_IF_ERROR(
                                    ParseRequirements(val, term.match_expressions, w,
                                                      "nodeSelectorTerms[].matchExpressions"));
                              } else if (key == "matchFields") {
                                RETURN_IF_ERROR(ParseRequirements(
                                    val, term.match_fields, w, "nodeSelectorTerms[].matchFields"));
                              }
                              return absl::OkStatus();
                            }));
                        details_.required_node_affinity.push_back(std::move(term));
                      }
                      return absl::OkStatus();
                    }));
                return absl::OkStatus();
              }));
        } else if (key == "podAffinity" || key == "podAntiAffinity") {
          RETURN_IF_ERROR(ForEachField(
              val, w, "spec.affinity",
              [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
                if (key != "requiredDuringSchedulingIgnoredDuringExecution")
                  return absl::OkStatus();
                bool null = false;
                GN_JSON(IsNull(val, null), w, "spec.affinity", "an array");
                details_.has_required_pod_affinity |= !null;
                return absl::OkStatus();
              }));
        }
        return absl::OkStatus();
      }));
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ParsePod(od::object& obj, Where& w) {
  const bool details = static_cast<bool>(options_.keep_pod_details);
  pod_ = PodView{};
  details_.uid = {};
  details_.labels.clear();
  details_.node_selector.clear();
  details_.has_required_node_affinity = false;
  details_.required_node_affinity.clear();
  details_.has_required_pod_affinity = false;
  details_.tolerations_present = false;
  details_.tolerations.clear();
  details_.containers.clear();
  details_.controller_kind = {};
  details_.controller_name = {};
  details_.unschedulable_message = {};
  for (auto field_result : obj) {
    od::field f;
    GN_JSON(std::move(field_result).get(f), w, "", "an object");
    od::raw_json_string key = f.key();
    od::value& val = f.value();
    if (key == "metadata") {
      RETURN_IF_ERROR(ForEachField(
          val, w, "metadata",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "name") {
              GN_JSON(ReadString(val, pod_.name), w, "metadata.name", "a string");
              w.name = pod_.name;
            } else if (key == "namespace") {
              GN_JSON(ReadString(val, pod_.ns), w, "metadata.namespace", "a string");
              w.ns = pod_.ns;
            } else if (key == "creationTimestamp") {
              std::string_view ts;
              GN_JSON(ReadString(val, ts), w, "metadata.creationTimestamp", "a string");
              pod_.created_unix = ParseRfc3339Seconds(ts);
            } else if (key == "deletionTimestamp") {
              GN_JSON(ReadString(val, pod_.deletion_timestamp), w, "metadata.deletionTimestamp",
                      "a string");
              pod_.terminating = !pod_.deletion_timestamp.empty();
            } else if (key == "annotations") {
              RETURN_IF_ERROR(ForEachField(
                  val, w, "metadata.annotations",
                  [&](od::field&, const od::raw_json_string& key, od::value&) -> absl::Status {
                    if (key == "kubernetes.io/config.mirror") pod_.mirror = true;
                    return absl::OkStatus();
                  }));
            } else if (key == "ownerReferences") {
              std::string_view kind, name;
              bool found = false;
              RETURN_IF_ERROR(ReadControllerOwner(val, w, kind, name, found));
              if (found) {
                pod_.has_controller = true;
                pod_.daemonset = kind == "DaemonSet";
                if (kind == "Job") pod_.job = name;
                details_.controller_kind = kind;
                details_.controller_name = name;
              }
            } else if (details && key == "labels") {
              RETURN_IF_ERROR(ParseStringMap(val, details_.labels, w, "metadata.labels"));
            } else if (details && key == "uid") {
              GN_JSON(ReadString(val, details_.uid), w, "metadata.uid", "a string");
            }
            return absl::OkStatus();
          }));
    } else if (key == "spec") {
      RETURN_IF_ERROR(ForEachField(
          val, w, "spec",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "nodeName") {
              GN_JSON(ReadString(val, pod_.node_name), w, "spec.nodeName", "a string");
            } else if (key == "activeDeadlineSeconds") {
              bool null = false;
              GN_JSON(IsNull(val, null), w, "spec.activeDeadlineSeconds", "an integer");
              pod_.active_deadline = !null;
            } else if (key == "containers") {
              RETURN_IF_ERROR(ParseContainers(val, false, w));
            } else if (key == "initContainers") {
              RETURN_IF_ERROR(ParseContainers(val, true, w));
            } else if (key == "volumes") {
              bool null = false;
              GN_JSON(IsNull(val, null), w, "spec.volumes", "an array");
              if (null) return absl::OkStatus();
              od::array volumes;
              GN_JSON(val.get_array().get(volumes), w, "spec.volumes", "an array");
              for (auto vol_result : volumes) {
                od::value vol;
                GN_JSON(std::move(vol_result).get(vol), w, "spec.volumes", "an array of objects");
                RETURN_IF_ERROR(ForEachField(
                    vol, w, "spec.volumes[]",
                    [&](od::field&, const od::raw_json_string& key, od::value&) -> absl::Status {
                      if (key == "emptyDir") pod_.uses_empty_dir = true;
                      return absl::OkStatus();
                    }));
              }
            } else if (details && key == "nodeSelector") {
              RETURN_IF_ERROR(ParseStringMap(val, details_.node_selector, w, "spec.nodeSelector"));
            } else if (details && key == "tolerations") {
              RETURN_IF_ERROR(ParseTolerations(val, w));
            } else if (details && key == "affinity") {
              RETURN_IF_ERROR(ParseAffinity(val, w));
            }
            return absl::OkStatus();
          }));
    } else if (key == "status") {
      RETURN_IF_ERROR(ForEachField(
          val, w, "status",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "phase") {
              std::string_view phase;
              GN_JSON(ReadString(val, phase), w, "status.phase", "a string");
              pod_.phase = phase == "Running"     ? PodPhase::kRunning
                           : phase == "Succeeded" ? PodPhase::kSucceeded
                           : phase == "Failed"    ? PodPhase::kFailed
                           : phase == "Unknown"   ? PodPhase::kUnknown
                                                  : PodPhase::kPending;
            } else if (details && key == "conditions") {
              bool null = false;
              GN_JSON(IsNull(val, null), w, "status.conditions", "an array");
              if (null) return absl::OkStatus();
              od::array conditions;
              GN_JSON(val.get_array().get(conditions), w, "status.conditions", "an array");
              for (auto cond_result : conditions) {
                od::value c;
                GN_JSON(std::move(cond_result).get(c), w, "status.conditions",
                        "an array of objects");
                std::string_view type, status, message;
                RETURN_IF_ERROR(ForEachField(c, w, "status.conditions[]",
                                             [&](od::field&, const od::raw_json_string& key,
                                                 od::value& val) -> absl::Status {
                                               if (key == "type") {
                                                 GN_JSON(ReadString(val, type), w,
                                                         "status.conditions[].type", "a string");
                                               } else if (key == "status") {
                                                 GN_JSON(ReadString(val, status), w,
                                                         "status.conditions[].status", "a string");
                                               } else if (key == "message") {
                                                 GN_JSON(ReadString(val, message), w,
                                                         "status.conditions[].message", "a string");
                                               }
                                               return absl::OkStatus();
                                             }));
                if (type == "PodScheduled" && status == "False") {
                  details_.unschedulable_message = message;
                }
              }
            }
            return absl::OkStatus();
          }));
    }
  }
  if (pod_.name.empty()) {
    return Fail(w, "metadata.name",
                StrCat("missing; every pod has a name (a pod template is not a pod); ", kFixInput));
  }
  // Init containers come first, as the scheduler walks them.
  std::stable_partition(details_.containers.begin(), details_.containers.end(),
                        [](const ContainerResources& c) { return c.init; });
  pod_.gpu_requests = EffectiveRequests(details_.containers);
  want_details_ = details;
  CommitPod();
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ParseLabelSelector(od::value& v, LabelSelector& out,
                                                       const Where& w) {
  bool null = false;
  GN_JSON(IsNull(v, null), w, "spec.selector", "an object");
  if (null) return absl::OkStatus();
  out.present = true;
  RETURN_IF_ERROR(ForEachField(
      v, w, "spec.selector",
      [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
        if (key == "matchLabels") {
          RETURN_IF_ERROR(ParseStringMap(val, out.match_labels, w, "spec.selector.matchLabels"));
        } else if (key == "matchExpressions") {
          std::vector<NodeSelectorRequirement> reqs;
          RETURN_IF_ERROR(ParseRequirements(val, reqs, w, "spec.selector.matchExpressions"));
          for (NodeSelectorRequirement& r : reqs) {
            out.match_expressions.push_back({r.key, r.op, std::move(r.values)});
          }
        }
        return absl::OkStatus();
      }));
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ParsePdb(od::object& obj, Where& w) {
  pdb_ = PdbView{};
  snap_.has_pdbs = true;
  for (auto field_result : obj) {
    od::field f;
    GN_JSON(std::move(field_result).get(f), w, "", "an object");
    od::raw_json_string key = f.key();
    od::value& val = f.value();
    if (key == "metadata") {
      RETURN_IF_ERROR(ForEachField(
          val, w, "metadata",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "name") {
              GN_JSON(ReadString(val, pdb_.name), w, "metadata.name", "a string");
              w.name = pdb_.name;
            } else if (key == "namespace") {
              GN_JSON(ReadString(val, pdb_.ns), w, "metadata.namespace", "a string");
              w.ns = pdb_.ns;
            }
            return absl::OkStatus();
          }));
    } else if (key == "spec") {
      RETURN_IF_ERROR(ForEachField(
          val, w, "spec",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "selector") RETURN_IF_ERROR(ParseLabelSelector(val, pdb_.selector, w));
            return absl::OkStatus();
          }));
    } else if (key == "status") {
      RETURN_IF_ERROR(ForEachField(
          val, w, "status",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            int64_t* target = key == "disruptionsAllowed" ? &pdb_.disruptions_allowed
                              : key == "currentHealthy"   ? &pdb_.current_healthy
                              : key == "desiredHealthy"   ? &pdb_.desired_healthy
                                                          : nullptr;
            if (target) GN_JSON(val.get_int64().get(*target), w, "status", "an integer");
            return absl::OkStatus();
          }));
    }
  }
  if (pdb_.name.empty()) {
    return Fail(w, "metadata.name", StrCat("missing; ", kFixInput));
  }
  StringArena& a = *snap_.strings;
  PdbView out;
  out.ns = a.Intern(pdb_.ns);
  out.name = a.Copy(pdb_.name);
  out.selector.present = pdb_.selector.present;
  out.selector.match_labels = CopyLabels(pdb_.selector.match_labels);
  for (const LabelRequirement& r : pdb_.selector.match_expressions) {
    out.selector.match_expressions.push_back(
        {a.Intern(r.key), a.Intern(r.op), CopyStrings(r.values)});
  }
  out.disruptions_allowed = pdb_.disruptions_allowed;
  out.current_healthy = pdb_.current_healthy;
  out.desired_healthy = pdb_.desired_healthy;
  snap_.pdbs.push_back(std::move(out));
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ParseJobSpec(od::value& v, const Where& w,
                                                 std::string_view path) {
  auto set_if_present = [&](od::value& val, std::string_view field, bool& out) -> absl::Status {
    bool null = false;
    GN_JSON(IsNull(val, null), w, field, "an integer");
    out = !null;
    return absl::OkStatus();
  };
  return ForEachField(
      v, w, path, [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
        if (key == "activeDeadlineSeconds") {
          return set_if_present(val, StrCat(path, ".activeDeadlineSeconds"),
                                job_.job_active_deadline);
        }
        if (key == "ttlSecondsAfterFinished") {
          return set_if_present(val, StrCat(path, ".ttlSecondsAfterFinished"),
                                job_.ttl_after_finished);
        }
        if (key == "backoffLimit") {
          bool null = false;
          GN_JSON(IsNull(val, null), w, StrCat(path, ".backoffLimit"), "an integer");
          if (!null) {
            GN_JSON(val.get_int64().get(job_.backoff_limit), w, StrCat(path, ".backoffLimit"),
                    "an integer");
          }
          return absl::OkStatus();
        }
        if (key == "podFailurePolicy") {
          return ForEachField(
              val, w, StrCat(path, ".podFailurePolicy"),
              [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
                if (key != "rules") return absl::OkStatus();
                std::string field = StrCat(path, ".podFailurePolicy.rules");
                bool null = false;
                GN_JSON(IsNull(val, null), w, field, "an array");
                if (null) return absl::OkStatus();
                od::array rules;
                GN_JSON(val.get_array().get(rules), w, field, "an array");
                for (auto rule_result : rules) {
                  od::value rule;
                  GN_JSON(std::move(rule_result).get(rule), w, field, "an array of objects");
                  std::string_view action;
                  bool on_disruption = false;
                  RETURN_IF_ERROR(ForEachField(
                      rule, w, StrCat(field, "[]"),
                      [&](od::field&, const od::raw_json_string& key,
                          od::value& val) -> absl::Status {
                        if (key == "action") {
                          GN_JSON(ReadString(val, action), w, StrCat(field, "[].action"),
                                  "a string");
                          return absl::OkStatus();
                        }
                        if (key != "onPodConditions") return absl::OkStatus();
                        std::string conditions_field = StrCat(field, "[].onPodConditions");
                        bool conditions_null = false;
                        GN_JSON(IsNull(val, conditions_null), w, conditions_field, "an array");
                        if (conditions_null) return absl::OkStatus();
                        od::array conditions;
                        GN_JSON(val.get_array().get(conditions), w, conditions_field, "an array");
                        for (auto cond_result : conditions) {
                          od::value cond;
                          GN_JSON(std::move(cond_result).get(cond), w, conditions_field,
                                  "an array of objects");
                          std::string_view type, status;
                          RETURN_IF_ERROR(ForEachField(
                              cond, w, conditions_field,
                              [&](od::field&, const od::raw_json_string& key,
                                  od::value& val) -> absl::Status {
                                if (key == "type") {
                                  GN_JSON(ReadString(val, type), w,
                                          StrCat(conditions_field, "[].type"), "a string");
                                } else if (key == "status") {
                                  GN_JSON(ReadString(val, status), w,
                                          StrCat(conditions_field, "[].status"), "a string");
                                }
                                return absl::OkStatus();
                              }));
                          // status defaults to True.
                          if (type == "DisruptionTarget" && (status.empty() || status == "True")) {
                            on_disruption = true;
                          }
                        }
                        return absl::OkStatus();
                      }));
                  if (action == "Ignore" && on_disruption) job_.ignores_disruptions = true;
                }
                return absl::OkStatus();
              });
        }
        if (key == "template") {
          return ForEachField(
              val, w, StrCat(path, ".template"),
              [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
                if (key != "spec") return absl::OkStatus();
                std::string pod_spec = StrCat(path, ".template.spec");
                return ForEachField(val, w, pod_spec,
                                    [&](od::field&, const od::raw_json_string& key,
                                        od::value& val) -> absl::Status {
                                      if (key == "activeDeadlineSeconds") {
                                        return set_if_present(
                                            val, StrCat(pod_spec, ".activeDeadlineSeconds"),
                                            job_.template_active_deadline);
                                      }
                                      if (key == "containers")
                                        return ParseContainers(val, false, w, pod_spec);
                                      if (key == "initContainers")
                                        return ParseContainers(val, true, w, pod_spec);
                                      return absl::OkStatus();
                                    });
              });
        }
        return absl::OkStatus();
      });
}

absl::Status SnapshotBuilder::Impl::ParseJob(od::object& obj, Where& w) {
  const bool cron = w.kind == "CronJob";
  job_ = JobView{};
  job_.kind = cron ? "CronJob" : "Job";
  details_.containers.clear();
  for (auto field_result : obj) {
    od::field f;
    GN_JSON(std::move(field_result).get(f), w, "", "an object");
    od::raw_json_string key = f.key();
    od::value& val = f.value();
    if (key == "metadata") {
      RETURN_IF_ERROR(ForEachField(
          val, w, "metadata",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "name") {
              GN_JSON(ReadString(val, job_.name), w, "metadata.name", "a string");
              w.name = job_.name;
            } else if (key == "namespace") {
              GN_JSON(ReadString(val, job_.ns), w, "metadata.namespace", "a string");
              w.ns = job_.ns;
            } else if (key == "ownerReferences" && !cron) {
              std::string_view kind, name;
              bool found = false;
              RETURN_IF_ERROR(ReadControllerOwner(val, w, kind, name, found));
              if (found && kind == "CronJob") job_.cronjob = name;
            }
            return absl::OkStatus();
          }));
    } else if (key == "spec") {
      if (!cron) {
        RETURN_IF_ERROR(ParseJobSpec(val, w, "spec"));
        continue;
      }
      RETURN_IF_ERROR(ForEachField(
          val, w, "spec",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key != "jobTemplate") return absl::OkStatus();
            return ForEachField(
                val, w, "spec.jobTemplate",
                [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
                  if (key != "spec") return absl::OkStatus();
                  return ParseJobSpec(val, w, "spec.jobTemplate.spec");
                });
          }));
    }
  }
  if (job_.name.empty()) {
    return Fail(w, "metadata.name",
                StrCat("missing; every ", job_.kind, " has a name; ", kFixInput));
  }
  std::stable_partition(details_.containers.begin(), details_.containers.end(),
                        [](const ContainerResources& c) { return c.init; });
  StringArena& a = *snap_.strings;
  JobView out = job_;
  out.ns = a.Intern(job_.ns);
  out.name = a.Copy(job_.name);
  out.cronjob = a.Copy(job_.cronjob);
  out.gpu_requests = CopyResources(EffectiveRequests(details_.containers));
  snap_.jobs.push_back(std::move(out));
  return absl::OkStatus();
}

absl::Status SnapshotBuilder::Impl::ParseEvent(od::object& obj, Where& w) {
  std::string_view ns, reason, message, host, reporting_instance, involved_kind, involved_ns,
      involved_name, first, last, event_time, series_last;
  int64_t count = 1;
  auto read_string = [&](od::value& val, std::string_view field,
                         std::string_view& out) -> absl::Status {
    GN_JSON(ReadString(val, out), w, field, "a string");
    return absl::OkStatus();
  };
  auto read_count = [&](od::value& val, std::string_view field) -> absl::Status {
    bool null = false;
    GN_JSON(IsNull(val, null), w, field, "an integer");
    if (!null) GN_JSON(val.get_int64().get(count), w, field, "an integer");
    return absl::OkStatus();
  };
  for (auto field_result : obj) {
    od::field f;
    GN_JSON(std::move(field_result).get(f), w, "", "an object");
    od::raw_json_string key = f.key();
    od::value& val = f.value();
    if (key == "metadata") {
      RETURN_IF_ERROR(ForEachField(
          val, w, "metadata",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "name") {
              RETURN_IF_ERROR(read_string(val, "metadata.name", w.name));
            } else if (key == "namespace") {
              RETURN_IF_ERROR(read_string(val, "metadata.namespace", ns));
              w.ns = ns;
            }
            return absl::OkStatus();
          }));
    } else if (key == "involvedObject" || key == "regarding") {
      // core/v1 names the pod in involvedObject, events.k8s.io/v1 in regarding.
      RETURN_IF_ERROR(ForEachField(
          val, w, "involvedObject",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "kind") return read_string(val, "involvedObject.kind", involved_kind);
            if (key == "namespace")
              return read_string(val, "involvedObject.namespace", involved_ns);
            if (key == "name") return read_string(val, "involvedObject.name", involved_name);
            return absl::OkStatus();
          }));
    } else if (key == "reason") {
      RETURN_IF_ERROR(read_string(val, "reason", reason));
    } else if (key == "message" || key == "note") {
      RETURN_IF_ERROR(read_string(val, "message", message));
    } else if (key == "source" || key == "deprecatedSource") {
      RETURN_IF_ERROR(ForEachField(
          val, w, "source",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "host") return read_string(val, "source.host", host);
            return absl::OkStatus();
          }));
    } else if (key == "reportingInstance") {
      RETURN_IF_ERROR(read_string(val, "reportingInstance", reporting_instance));
    } else if (key == "firstTimestamp" || key == "deprecatedFirstTimestamp") {
      RETURN_IF_ERROR(read_string(val, "firstTimestamp", first));
    } else if (key == "lastTimestamp" || key == "deprecatedLastTimestamp") {
      RETURN_IF_ERROR(read_string(val, "lastTimestamp", last));
    } else if (key == "eventTime") {
      RETURN_IF_ERROR(read_string(val, "eventTime", event_time));
    } else if (key == "count" || key == "deprecatedCount") {
      RETURN_IF_ERROR(read_count(val, "count"));
    } else if (key == "series") {
      RETURN_IF_ERROR(ForEachField(
          val, w, "series",
          [&](od::field&, const od::raw_json_string& key, od::value& val) -> absl::Status {
            if (key == "count") return read_count(val, "series.count");
            if (key == "lastObservedTime") {
              return read_string(val, "series.lastObservedTime", series_last);
            }
            return absl::OkStatus();
          }));
    }
  }
  if (involved_kind != "Pod") return absl::OkStatus();
  std::optional<PullMessage> pull = ParsePullMessage(reason, message);
  if (!pull) return absl::OkStatus();
  StringArena& a = *snap_.strings;
  ImagePullEvent& out = snap_.image_pulls.emplace_back();
  out.ns = a.Intern(involved_ns.empty() ? ns : involved_ns);
  out.pod = a.Copy(involved_name);
  out.node = a.Intern(!host.empty() ? host : reporting_instance);
  out.image = a.Intern(pull->image);
  out.outcome = pull->outcome;
  out.waited_millis = pull->waited_millis;
  out.pulled_millis = pull->pulled_millis;
  out.first_unix = ParseRfc3339Seconds(!first.empty() ? first : event_time);
  out.last_unix = ParseRfc3339Seconds(!last.empty()          ? last
                                      : !series_last.empty() ? series_last
                                                             : event_time);
  if (out.last_unix == 0) out.last_unix = out.first_unix;
  out.count = count;
  return absl::OkStatus();
}

Labels SnapshotBuilder::Impl::CopyLabels(const Labels& in) {
  Labels out;
  out.reserve(in.size());
  for (const auto& [k, v] : in) out.emplace_back(snap_.strings->Intern(k), snap_.strings->Copy(v));
  return out;
}

ResourceList SnapshotBuilder::Impl::CopyResources(const ResourceList& in) {
  ResourceList out;
  for (const ResourceAmount& r : in) {
    out.push_back({snap_.strings->Intern(r.name), r.milli, snap_.strings->Copy(r.text)});
  }
  return out;
}

std::vector<std::string_view> SnapshotBuilder::Impl::CopyStrings(
    const std::vector<std::string_view>& in) {
  std::vector<std::string_view> out;
  out.reserve(in.size());
  for (std::string_view s : in) out.push_back(snap_.strings->Copy(s));
  return out;
}

void SnapshotBuilder::Impl::CommitNode() {
  StringArena& a = *snap_.strings;
  NodeView out;
  out.name = a.Intern(node_.name);
  out.labels = CopyLabels(node_.labels);
  for (const Taint& t : node_.taints) {
    out.taints.push_back({a.Intern(t.key), a.Copy(t.value), a.Intern(t.effect)});
  }
  out.unschedulable = node_.unschedulable;
  out.ready = node_.ready;
  out.capacity = CopyResources(node_.capacity);
  out.allocatable = CopyResources(node_.allocatable);
  out.drain_started_at = a.Copy(node_.drain_started_at);
  out.gpunode_annotations = CopyLabels(node_.gpunode_annotations);
  snap_.nodes.push_back(std::move(out));
}

void SnapshotBuilder::Impl::CommitPod() {
  StringArena& a = *snap_.strings;
  PodView& out = snap_.pods.emplace_back();
  out.ns = a.Intern(pod_.ns);
  out.name = a.Copy(pod_.name);
  out.node_name = a.Intern(pod_.node_name);
  out.phase = pod_.phase;
  out.terminating = pod_.terminating;
  out.daemonset = pod_.daemonset;
  out.mirror = pod_.mirror;
  out.has_controller = pod_.has_controller;
  out.uses_empty_dir = pod_.uses_empty_dir;
  out.created_unix = pod_.created_unix;
  out.deletion_timestamp = a.Copy(pod_.deletion_timestamp);
  out.active_deadline = pod_.active_deadline;
  out.job = a.Copy(pod_.job);
  out.gpu_requests = pod_.gpu_requests;  // names point at interned copies below
  for (ResourceAmount& r : out.gpu_requests) r.name = a.Intern(r.name);
  if (!want_details_ || !options_.keep_pod_details(pod_)) return;
  auto d = std::make_unique<PodDetails>();
  d->uid = a.Copy(details_.uid);
  d->labels = CopyLabels(details_.labels);
  d->node_selector = CopyLabels(details_.node_selector);
  d->has_required_node_affinity = details_.has_required_node_affinity;
  for (const NodeSelectorTerm& t : details_.required_node_affinity) {
    NodeSelectorTerm copy;
    for (const NodeSelectorRequirement& r : t.match_expressions) {
      copy.match_expressions.push_back({a.Intern(r.key), a.Intern(r.op), CopyStrings(r.values)});
    }
    for (const NodeSelectorRequirement& r : t.match_fields) {
      copy.match_fields.push_back({a.Intern(r.key), a.Intern(r.op), CopyStrings(r.values)});
    }
    d->required_node_affinity.push_back(std::move(copy));
  }
  d->has_required_pod_affinity = details_.has_required_pod_affinity;
  d->tolerations_present = details_.tolerations_present;
  for (const Toleration& t : details_.tolerations) {
    d->tolerations.push_back(
        {a.Intern(t.key), a.Intern(t.op), a.Copy(t.value), a.Intern(t.effect), t.has_seconds});
  }
  for (const ContainerResources& c : details_.containers) {
    d->containers.push_back(
        {a.Copy(c.name), c.init, c.sidecar, CopyResources(c.requests), CopyResources(c.limits)});
  }
  d->controller_kind = a.Intern(details_.controller_kind);
  d->controller_name = a.Copy(details_.controller_name);
  d->unschedulable_message = a.Copy(details_.unschedulable_message);
  out.details = std::move(d);
}

SnapshotBuilder::SnapshotBuilder(ReadOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
SnapshotBuilder::~SnapshotBuilder() = default;

absl::Status SnapshotBuilder::Add(simdjson::padded_string_view json, std::string_view source,
                                  std::string* continue_token) {
  return impl_->Add(json, source, continue_token);
}

ClusterSnapshot SnapshotBuilder::Take() { return impl_->Take(); }

namespace {

// A read buffer with simdjson's padding after the data. realloc lets glibc grow large buffers
// with mremap instead of copying, so reading a pipe never holds two copies of a snapshot.
struct PaddedBuffer {
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data;
  size_t size = 0;
  size_t capacity = 0;

  bool Reserve(size_t wanted) {
    if (wanted <= capacity) return true;
    char* p = static_cast<char*>(std::realloc(data.get(), wanted));
    if (p == nullptr) return false;
    (void)data.release();
    data.reset(p);
    capacity = wanted;
    return true;
  }
};

absl::StatusOr<PaddedBuffer> ReadAll(const std::string& path) {
  const bool is_stdin = path == "-";
  std::string name = is_stdin ? "stdin" : path;
  int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(StrCat(name, ": cannot open: ", std::strerror(errno),
                                      "; give a file written by `kubectl get nodes,pods -A "
                                      "-o json` (or - for stdin)"));
  }
  PaddedBuffer buf;
  off_t size = is_stdin ? -1 : ::lseek(fd, 0, SEEK_END);
  if (size > 0) ::lseek(fd, 0, SEEK_SET);
  size_t initial = size > 0 ? static_cast<size_t>(size) : (1 << 20);
  bool ok = buf.Reserve(initial + simdjson::SIMDJSON_PADDING + 1);
  while (ok) {
    if (buf.capacity - buf.size < simdjson::SIMDJSON_PADDING + 4096) {
      ok = buf.Reserve(buf.capacity * 2);
      if (!ok) break;
    }
    ssize_t n =
        ::read(fd, buf.data.get() + buf.size, buf.capacity - buf.size - simdjson::SIMDJSON_PADDING);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      if (!is_stdin) ::close(fd);
      return absl::InternalError(StrCat(name, ": cannot read: ", std::strerror(err)));
    }
    if (n == 0) break;
    buf.size += static_cast<size_t>(n);
  }
  if (!is_stdin) ::close(fd);
  if (!ok) return absl::ResourceExhaustedError(StrCat(name, ": out of memory reading it"));
  std::memset(buf.data.get() + buf.size, 0, simdjson::SIMDJSON_PADDING);
  return buf;
}

}  // namespace

absl::StatusOr<ClusterSnapshot> ReadSnapshotFile(const std::string& path,
                                                 const ReadOptions& options) {
  absl::StatusOr<PaddedBuffer> buf = ReadAll(path);
  if (!buf.ok()) return buf.status();
  if (buf->size == 0) {
    return absl::InvalidArgumentError(StrCat(path == "-" ? "stdin" : path, ": empty; ", kFixInput));
  }
  SnapshotBuilder builder(options);
  absl::Status st =
      builder.Add(simdjson::padded_string_view(buf->data.get(), buf->size, buf->capacity),
                  path == "-" ? "stdin" : path);
  if (!st.ok()) return st;
  return builder.Take();
}

absl::StatusOr<ClusterSnapshot> ReadSnapshotText(std::string_view json, std::string_view source,
                                                 const ReadOptions& options) {
  simdjson::padded_string padded(json);
  SnapshotBuilder builder(options);
  RETURN_IF_ERROR(builder.Add(padded, source));
  return builder.Take();
}

}  // namespace gpunode::kube
