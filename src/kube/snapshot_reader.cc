// The top of the snapshot reader: one JSON document (a v1 List, an API list page or a single
// object) is walked once with simdjson's On-Demand API, and each item is handed to the reader of
// its kind (node_reader, pod_reader, pdb_reader, job_reader, event_reader), which copies what it
// keeps into the snapshot's arena before the next document.
#include "kube/snapshot_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/status_macros.h"
#include "core/text.h"
#include "kube/event_reader.h"
#include "kube/job_reader.h"
#include "kube/json_walk.h"
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
                   std::string* continue_token);
  ClusterSnapshot Take() { return std::exchange(snap_, ClusterSnapshot{}); }

 private:
  absl::StatusOr<Pass> ReadTopLevel(od::object& top, const JsonWalk& walk, TopLevel& out,
                                    std::string* continue_token);
  absl::StatusOr<Pass> ReadItems(od::value& items, const JsonWalk& walk,
                                 std::string_view list_kind);
  absl::StatusOr<Pass> ReadItem(od::value& item, const JsonWalk& walk, std::string_view list_kind);
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
                                        std::string* continue_token) {
  if (continue_token) continue_token->clear();
  JsonInput input(source, json.data());
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
    RETURN_IF_ERROR(item_walk.Check(std::move(item_result).get(item), "", "an object"));
    ASSIGN_OR_RETURN(Pass pass, ReadItem(item, item_walk, list_kind));
    if (pass == Pass::kNeedsListKind) return pass;
  }
  return Pass::kComplete;
}

absl::StatusOr<Pass> SnapshotBuilder::Impl::ReadItem(od::value& item, const JsonWalk& walk,
                                                     std::string_view list_kind) {
  od::object obj;
  RETURN_IF_ERROR(walk.Check(item.get_object().get(obj), "", "an object"));
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
