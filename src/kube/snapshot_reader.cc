// The top of the snapshot reader: one JSON document (a v1 List, an API list page or a single
// object) is walked once with simdjson's On-Demand API, and each item is handed to the reader of
// its kind (node_reader, pod_reader, pdb_reader, job_reader, event_reader), which copies what it
// keeps into the snapshot's arena before the next document. A file is streamed: ListStream
// hands its items over one at a time, and the rest (the envelope) is read last.
#include "kube/snapshot_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/status_macros.h"
#include "core/text.h"
#include "core/unique_fd.h"
#include "kube/event_reader.h"
#include "kube/job_reader.h"
#include "kube/json_walk.h"
#include "kube/list_stream.h"
#include "kube/node_reader.h"
#include "kube/pdb_reader.h"
#include "kube/pod_reader.h"

namespace gpunode::kube {

using core::StrCat;

namespace {

using simdjson::error_code;

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

// How far a pass over a document got. Items without a kind take the list's kind; an item met
// before the list's kind was read (a writer that sorted the keys puts "kind" after "items")
// stops the pass, and the caller reads the list's kind and passes again.
enum class Pass { kComplete, kNeedsListKind };

// The top-level fields of a document.
struct TopLevel {
  std::string_view kind;
  std::string_view api_version;
  bool saw_items = false;
};

// How many objects of each kind a snapshot holds, to forget what a stopped pass kept.
struct Counts {
  explicit Counts(const ClusterSnapshot& s)
      : nodes(s.nodes.size()),
        pods(s.pods.size()),
        pdbs(s.pdbs.size()),
        jobs(s.jobs.size()),
        image_pulls(s.image_pulls.size()) {}
  void TruncateTo(ClusterSnapshot& s) const {
    s.nodes.resize(nodes);
    s.pods.resize(pods);
    s.pdbs.resize(pdbs);
    s.jobs.resize(jobs);
    s.image_pulls.resize(image_pulls);
  }
  size_t nodes, pods, pdbs, jobs, image_pulls;
};

}  // namespace

class SnapshotBuilder::Impl {
 public:
  explicit Impl(ReadOptions options) : options_(std::move(options)), pods_(options_) {}

  absl::Status Add(simdjson::padded_string_view json, std::string_view source,
                   std::string* continue_token, const TextOrigin* origin);
  absl::StatusOr<bool> AddItem(simdjson::padded_string_view item, size_t index,
                               std::string_view list_kind, std::string_view source,
                               const TextOrigin& origin);
  ClusterSnapshot Take() { return std::exchange(snap_, ClusterSnapshot{}); }

 private:
  absl::StatusOr<Pass> ReadTopLevel(od::object& top, const JsonWalk& walk, TopLevel& out,
                                    std::string* continue_token);
  absl::StatusOr<Pass> ReadItems(od::value& items, const JsonWalk& walk,
                                 std::string_view list_kind);
  absl::StatusOr<Pass> ReadItem(od::value& item, const JsonWalk& walk, std::string_view list_kind);
  absl::StatusOr<Pass> ReadItemObject(od::object& obj, const JsonWalk& walk,
                                      std::string_view list_kind);
  // Hands the object to the reader of walk.where().kind, one of the kept kinds.
  absl::Status ReadObject(od::object& obj, const JsonWalk& walk);

  ReadOptions options_;
  od::parser parser_;
  ClusterSnapshot snap_;
  NodeReader nodes_;
  PodReader pods_;
  JobReader jobs_;
};

absl::Status SnapshotBuilder::Impl::Add(simdjson::padded_string_view json, std::string_view source,
                                        std::string* continue_token, const TextOrigin* origin) {
  if (continue_token) continue_token->clear();
  JsonInput input(source, json.data(), origin);
  Where top_where = Where::Object("List");
  JsonWalk top_walk(input, top_where);
  od::document doc;
  if (error_code e = parser_.iterate(json).get(doc)) {
    return absl::InvalidArgumentError(
        StrCat(source, ": cannot parse JSON (", simdjson::error_message(e), "); ", kFixInput));
  }
  input.set_document(&doc);
  od::object top;
  if (error_code e = doc.get_object().get(top)) {
    if (e == simdjson::INCORRECT_TYPE) {
      return absl::InvalidArgumentError(
          StrCat(source, ": not a JSON object; ", kFixInput, " (a v1 List)"));
    }
    return top_walk.FailJson("", "an object", e);
  }
  TopLevel fields;
  const Counts before(snap_);
  ASSIGN_OR_RETURN(Pass pass, ReadTopLevel(top, top_walk, fields, continue_token));
  if (pass == Pass::kNeedsListKind) {
    // Forget what the first pass kept, find the list's kind, and read again.
    before.TruncateTo(snap_);
    Where first_item = Where::Item(0);
    absl::Status no_kind = JsonWalk(input, first_item)
                               .Fail("kind", StrCat("missing, and the list's kind does not say "
                                                    "it; ",
                                                    kFixInput));
    RETURN_IF_ERROR(top_walk.Check(top.reset().error(), "", "an object"));
    od::value kind_value;
    if (top.find_field_unordered("kind").get(kind_value) != simdjson::SUCCESS ||
        !top_walk.ReadString(kind_value, "kind", fields.kind).ok() ||
        ItemKindOf(fields.kind).empty()) {
      return no_kind;
    }
    RETURN_IF_ERROR(top_walk.Check(top.reset().error(), "", "an object"));
    ASSIGN_OR_RETURN(pass, ReadTopLevel(top, top_walk, fields, continue_token));
    if (pass == Pass::kNeedsListKind) return no_kind;
  }
  if (fields.saw_items) {
    bool known = fields.kind == "List" || !ItemKindOf(fields.kind).empty();
    if (!known) {
      return absl::InvalidArgumentError(
          StrCat(source, ": kind is \"", fields.kind, "\", not a v1 List; ", kFixInput));
    }
    if (fields.kind == "List" && fields.api_version != "v1") {
      return absl::InvalidArgumentError(
          StrCat(source, ": apiVersion is \"", fields.api_version, "\", not v1; ", kFixInput));
    }
    if (fields.kind == "PodDisruptionBudgetList") snap_.has_pdbs = true;
  } else if (IsKeptKind(fields.kind)) {
    // A single object, as `kubectl get pod NAME -o json` prints it.
    Where w = Where::Object(fields.kind);
    JsonWalk walk(input, w);
    RETURN_IF_ERROR(walk.Check(top.reset().error(), "", "an object"));
    RETURN_IF_ERROR(ReadObject(top, walk));
  } else {
    return absl::InvalidArgumentError(
        StrCat(source, ": not a v1 List (kind \"", fields.kind, "\", no items); ", kFixInput));
  }
  if (const char* trailing = nullptr; doc.current_location().get(trailing) == simdjson::SUCCESS) {
    return absl::InvalidArgumentError(StrCat(source, ": unexpected content after the JSON document",
                                             input.Location(), "; give one document per file"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Pass> SnapshotBuilder::Impl::ReadTopLevel(od::object& top, const JsonWalk& walk,
                                                         TopLevel& out,
                                                         std::string* continue_token) {
  // Not ForEachField: a pass that needs the list's kind stops right there.
  for (auto field_result : top) {
    od::field f;
    RETURN_IF_ERROR(walk.Check(std::move(field_result).get(f), "", "an object"));
    FieldKey key(f);
    od::value& val = f.value();
    if (key == "kind") {
      RETURN_IF_ERROR(walk.ReadString(val, "kind", out.kind));
    } else if (key == "apiVersion") {
      RETURN_IF_ERROR(walk.ReadString(val, "apiVersion", out.api_version));
    } else if (key == "metadata" && continue_token) {
      // A list's metadata carries the continue token. Only that field is read, so a single
      // object's metadata is left for the second pass over the object.
      RETURN_IF_ERROR(walk.ForEachField(val, "metadata", [&](const FieldKey& key, od::value& val) {
        if (key != "continue") return absl::OkStatus();
        std::string_view token;
        RETURN_IF_ERROR(walk.ReadString(val, "metadata.continue", token));
        continue_token->assign(token);
        return absl::OkStatus();
      }));
    } else if (key == "items") {
      out.saw_items = true;
      ASSIGN_OR_RETURN(Pass pass, ReadItems(val, walk, out.kind));
      if (pass == Pass::kNeedsListKind) return pass;
    }
  }
  return Pass::kComplete;
}

absl::StatusOr<Pass> SnapshotBuilder::Impl::ReadItems(od::value& items, const JsonWalk& walk,
                                                      std::string_view list_kind) {
  bool null = false;
  RETURN_IF_ERROR(walk.IsNull(items, "items", "an array", null));
  if (null) return Pass::kComplete;
  od::array array;
  RETURN_IF_ERROR(walk.Check(items.get_array().get(array), "items", "an array"));
  size_t index = 0;
  for (auto item_result : array) {
    Where w = Where::Item(index++);
    JsonWalk item_walk(walk.input(), w);
    od::value item;
    // simdjson's get() is for an rvalue result: the move picks the overload.
    RETURN_IF_ERROR(
        item_walk.Check(std::move(item_result).get(item),  // NOLINT(performance-move-const-arg)
                        "", "an object"));
    ASSIGN_OR_RETURN(Pass pass, ReadItem(item, item_walk, list_kind));
    if (pass == Pass::kNeedsListKind) return pass;
  }
  return Pass::kComplete;
}

absl::StatusOr<bool> SnapshotBuilder::Impl::AddItem(simdjson::padded_string_view item, size_t index,
                                                    std::string_view list_kind,
                                                    std::string_view source,
                                                    const TextOrigin& origin) {
  JsonInput input(source, item.data(), &origin);
  Where w = Where::Item(index);
  JsonWalk walk(input, w);
  od::document doc;
  if (error_code e = parser_.iterate(item).get(doc)) {
    return absl::InvalidArgumentError(
        StrCat(source, ": cannot parse JSON (", simdjson::error_message(e), ") in ", Describe(w),
               " near line ", origin.line, " (byte ", origin.byte, "); ", kFixInput));
  }
  input.set_document(&doc);
  od::object obj;
  RETURN_IF_ERROR(walk.Check(doc.get_object().get(obj), "", "an object"));
  ASSIGN_OR_RETURN(Pass pass, ReadItemObject(obj, walk, list_kind));
  return pass == Pass::kComplete;
}

absl::StatusOr<Pass> SnapshotBuilder::Impl::ReadItem(od::value& item, const JsonWalk& walk,
                                                     std::string_view list_kind) {
  od::object obj;
  RETURN_IF_ERROR(walk.Check(item.get_object().get(obj), "", "an object"));
  return ReadItemObject(obj, walk, list_kind);
}

absl::StatusOr<Pass> SnapshotBuilder::Impl::ReadItemObject(od::object& obj, const JsonWalk& walk,
                                                           std::string_view list_kind) {
  // Find the kind first wherever it sits (kubectl and the API server both put it before
  // metadata, so this is cheap), then rewind and read the object in one pass.
  std::string_view kind;
  od::value kind_value;
  error_code e = obj.find_field_unordered("kind").get(kind_value);
  if (e == simdjson::SUCCESS) {
    RETURN_IF_ERROR(walk.ReadString(kind_value, "kind", kind));
  } else if (e == simdjson::NO_SUCH_FIELD) {
    kind = ItemKindOf(list_kind);
    if (kind.empty()) return Pass::kNeedsListKind;
  } else {
    return walk.FailJson("kind", "a string", e);
  }
  if (!IsKeptKind(kind)) {
    return Pass::kComplete;  // other kinds (Services, Deployments, ...) do not matter here
  }
  walk.where().kind = kind;
  RETURN_IF_ERROR(walk.Check(obj.reset().error(), "", "an object"));
  RETURN_IF_ERROR(ReadObject(obj, walk));
  return Pass::kComplete;
}

absl::Status SnapshotBuilder::Impl::ReadObject(od::object& obj, const JsonWalk& walk) {
  std::string_view kind = walk.where().kind;
  if (kind == "Node") return nodes_.Read(obj, walk, snap_);
  if (kind == "Pod") return pods_.Read(obj, walk, snap_);
  if (kind == "Job" || kind == "CronJob") return jobs_.Read(obj, walk, snap_);
  if (kind == "Event") return ReadEvent(obj, walk, snap_);
  return ReadPdb(obj, walk, snap_);
}

SnapshotBuilder::SnapshotBuilder(ReadOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
SnapshotBuilder::~SnapshotBuilder() = default;

absl::Status SnapshotBuilder::Add(simdjson::padded_string_view json, std::string_view source,
                                  std::string* continue_token, const TextOrigin* origin) {
  return impl_->Add(json, source, continue_token, origin);
}

absl::StatusOr<bool> SnapshotBuilder::AddItem(simdjson::padded_string_view item, size_t index,
                                              std::string_view list_kind, std::string_view source,
                                              const TextOrigin& origin) {
  return impl_->AddItem(item, index, list_kind, source, origin);
}

ClusterSnapshot SnapshotBuilder::Take() { return impl_->Take(); }

namespace {

constexpr std::string_view kGiveASnapshot =
    "give a file written by `kubectl get nodes,pods -A -o json` (or - for stdin)";

// A read buffer with simdjson's padding after the data, for reading a whole document.
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

// Reads `fd` from where it is to its end into one buffer.
absl::StatusOr<PaddedBuffer> ReadAll(int fd, std::string_view source) {
  PaddedBuffer buf;
  struct stat st {};
  size_t initial =
      ::fstat(fd, &st) == 0 && st.st_size > 0 ? static_cast<size_t>(st.st_size) : size_t{1} << 20;
  bool ok = buf.Reserve(initial + simdjson::SIMDJSON_PADDING + 1);
  while (ok) {
    if (buf.capacity - buf.size < simdjson::SIMDJSON_PADDING + 4096) {
      ok = buf.Reserve(buf.capacity * 2);
      if (!ok) break;
    }
    ssize_t n =
        ::read(fd, buf.data.get() + buf.size, buf.capacity - buf.size - simdjson::SIMDJSON_PADDING);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(StrCat(source, ": cannot read: ", std::strerror(errno)));
    if (n == 0) break;
    buf.size += static_cast<size_t>(n);
  }
  if (!ok) return absl::ResourceExhaustedError(StrCat(source, ": out of memory reading it"));
  std::memset(buf.data.get() + buf.size, 0, simdjson::SIMDJSON_PADDING);
  return buf;
}

// The text of a JSON string written without escapes; empty for anything else.
std::string_view PlainString(std::string_view json) {
  if (json.size() < 2 || json.front() != '"' || json.back() != '"') return {};
  json = json.substr(1, json.size() - 2);
  return json.find('\\') == std::string_view::npos ? json : std::string_view{};
}

// Whether a document that is not JSON is YAML, as `kubectl get -o yaml` writes it.
bool LooksLikeYaml(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return false;
  text = text.substr(first);
  if (text.starts_with("---") || text.starts_with("#")) return true;
  std::string_view line = text.substr(0, text.find('\n'));
  return std::isalpha(static_cast<unsigned char>(line.front())) &&
         line.find(':') != std::string_view::npos;
}

// The list's kind came after items that have none: read the document again, whole.
absl::StatusOr<ClusterSnapshot> ReadAgainWhole(int fd, std::string_view source,
                                               const ReadOptions& options, size_t item) {
  if (::lseek(fd, 0, SEEK_SET) != 0) {
    return absl::InvalidArgumentError(
        StrCat(source, ": items[", item,
               "] (item): kind: missing, and the list's kind comes after its items, which "
               "cannot be read twice from a pipe; give the file itself, or put \"kind\" before "
               "\"items\""));
  }
  ASSIGN_OR_RETURN(PaddedBuffer buf, ReadAll(fd, source));
  SnapshotBuilder builder(options);
  RETURN_IF_ERROR(
      builder.Add(simdjson::padded_string_view(buf.data.get(), buf.size, buf.capacity), source));
  return builder.Take();
}

}  // namespace

absl::StatusOr<ClusterSnapshot> ReadSnapshotStream(int fd, std::string_view source,
                                                   const ReadOptions& options,
                                                   size_t buffer_bytes) {
  SnapshotBuilder builder(options);
  ListStream stream(fd, source, buffer_bytes);
  std::string list_kind;
  size_t stopped_at = 0;
  ASSIGN_OR_RETURN(
      bool complete,
      stream.Run(
          [&](std::string_view key, std::string_view value) {
            if (key == "kind") list_kind = PlainString(value);
          },
          [&](const ListStream::Item& item) -> absl::StatusOr<ListStream::Next> {
            ASSIGN_OR_RETURN(
                bool read, builder.AddItem(item.json, item.index, list_kind, source, item.origin));
            if (read) return ListStream::Next::kContinue;
            stopped_at = item.index;
            return ListStream::Next::kStop;
          }));
  if (!complete) return ReadAgainWhole(fd, source, options, stopped_at);
  simdjson::padded_string_view envelope = stream.Envelope();
  if (envelope.size() == 0)
    return absl::InvalidArgumentError(StrCat(source, ": empty; ", kFixInput));
  absl::Status read = builder.Add(envelope, source, nullptr, &stream.EnvelopeOrigin());
  if (!read.ok() && LooksLikeYaml(envelope)) {
    return absl::InvalidArgumentError(StrCat(
        source, ": YAML, not JSON; write the snapshot with `kubectl get nodes,pods -A -o json`"));
  }
  RETURN_IF_ERROR(read);
  return builder.Take();
}

absl::StatusOr<ClusterSnapshot> ReadSnapshotFile(const std::string& path,
                                                 const ReadOptions& options) {
  if (path == "-") return ReadSnapshotStream(STDIN_FILENO, "stdin", options);
  core::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return absl::NotFoundError(
        StrCat(path, ": cannot open: ", std::strerror(errno), "; ", kGiveASnapshot));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(StrCat(path, ": is a directory; ", kGiveASnapshot));
  }
  return ReadSnapshotStream(fd.get(), path, options);
}

absl::StatusOr<ClusterSnapshot> ReadSnapshotText(std::string_view json, std::string_view source,
                                                 const ReadOptions& options) {
  simdjson::padded_string padded(json);
  SnapshotBuilder builder(options);
  RETURN_IF_ERROR(builder.Add(padded, source));
  return builder.Take();
}

}  // namespace gpunode::kube
