#include "harness/apiserver_double.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <sstream>
#include <thread>

#include "httplib.h"

namespace gpunode::testing {
namespace {

using json = nlohmann::json;

constexpr int kDefaultLimit = 500;

json StatusObject(int code, const std::string& reason, const std::string& message,
                  json details = nullptr) {
  json s = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
            {"status", "Failure"}, {"message", message}, {"reason", reason},
            {"code", code}};
  if (!details.is_null()) s["details"] = details;
  return s;
}

void Reply(httplib::Response& res, int code, const json& body) {
  res.status = code;
  res.set_content(body.dump(), "application/json");
}

std::string Base64(const std::string& in) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v =
        (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 | (unsigned char)in[i + 2];
    for (int k = 3; k >= 0; --k) out.push_back(kAlphabet[(v >> (6 * k)) & 63]);
  }
  if (i < in.size()) {
    unsigned v = (unsigned char)in[i] << 16;
    if (i + 1 < in.size()) v |= (unsigned char)in[i + 1] << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> Unbase64(const std::string& in) {
  std::string out;
  unsigned v = 0;
  int bits = 0;
  for (char c : in) {
    int d;
    if (c >= 'A' && c <= 'Z')
      d = c - 'A';
    else if (c >= 'a' && c <= 'z')
      d = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      d = c - '0' + 52;
    else if (c == '+' || c == '-')
      d = 62;
    else if (c == '/' || c == '_')
      d = 63;
    else if (c == '=')
      break;
    else
      return std::nullopt;
    v = v << 6 | d;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((v >> bits) & 0xff));
    }
  }
  return out;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) {
    if (!cur.empty()) out.push_back(cur);
  }
  return out;
}

const json* Find(const json& j, std::initializer_list<const char*> path) {
  const json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object() || !cur->contains(k)) return nullptr;
    cur = &(*cur)[k];
  }
  return cur;
}

std::string StringAt(const json& j, std::initializer_list<const char*> path) {
  const json* v = Find(j, path);
  return v && v->is_string() ? v->get<std::string>() : "";
}

struct Requirement {
  std::string key;
  std::string op;  // =, !=, exists, !exists
  std::string value;
};

// Parses "a=b,c!=d,e,!f" (field selectors use only = / == / !=).
std::vector<Requirement> ParseSelector(const std::string& s) {
  std::vector<Requirement> out;
  for (const std::string& term : Split(s, ',')) {
    size_t ne = term.find("!=");
    size_t eq = term.find('=');
    if (ne != std::string::npos) {
      out.push_back({term.substr(0, ne), "!=", term.substr(ne + 2)});
    } else if (eq != std::string::npos) {
      size_t skip = term.compare(eq, 2, "==") == 0 ? 2 : 1;
      out.push_back({term.substr(0, eq), "=", term.substr(eq + skip)});
    } else if (!term.empty() && term[0] == '!') {
      out.push_back({term.substr(1), "!exists", ""});
    } else {
      out.push_back({term, "exists", ""});
    }
  }
  return out;
}

bool MatchesLabels(const std::vector<Requirement>& reqs, const json& obj) {
  const json* labels = Find(obj, {"metadata", "labels"});
  for (const Requirement& r : reqs) {
    bool has = labels && labels->is_object() && labels->contains(r.key);
    std::string v = has ? (*labels)[r.key].get<std::string>() : "";
    if (r.op == "=" && (!has || v != r.value)) return false;
    if (r.op == "!=" && has && v == r.value) return false;
    if (r.op == "exists" && !has) return false;
    if (r.op == "!exists" && has) return false;
  }
  return true;
}

// A PodDisruptionBudget's selector against pod labels (matchLabels and matchExpressions).
bool PdbSelects(const json& pdb, const json& pod) {
  const json* sel = Find(pdb, {"spec", "selector"});
  if (!sel || !sel->is_object()) return false;
  const json* labels = Find(pod, {"metadata", "labels"});
  auto label = [&](const std::string& k) -> std::optional<std::string> {
    if (!labels || !labels->is_object() || !labels->contains(k)) return std::nullopt;
    return (*labels)[k].get<std::string>();
  };
  if (sel->contains("matchLabels")) {
    for (auto& [k, v] : (*sel)["matchLabels"].items()) {
      if (label(k) != v.get<std::string>()) return false;
    }
  }
  if (sel->contains("matchExpressions")) {
    for (const json& e : (*sel)["matchExpressions"]) {
      auto have = label(e.value("key", ""));
      std::string op = e.value("operator", "");
      std::vector<std::string> values = e.value("values", std::vector<std::string>{});
      bool in = have && std::find(values.begin(), values.end(), *have) != values.end();
      if ((op == "In" && !in) || (op == "NotIn" && in) || (op == "Exists" && !have) ||
          (op == "DoesNotExist" && have)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

class ApiServerDouble::Impl {
 public:
  explicit Impl(Options options) : options_(std::move(options)) {
    if (!options_.tls_cert.empty()) {
      auto tls =
          std::make_unique<httplib::SSLServer>(options_.tls_cert.c_str(), options_.tls_key.c_str());
      if (options_.tls13_only && tls->is_valid()) {
        SSL_CTX_set_min_proto_version(tls->ssl_context(), TLS1_3_VERSION);
      }
      server_ = std::move(tls);
    } else {
      server_ = std::make_unique<httplib::Server>();
    }
    // Without it, Nagle's algorithm and delayed ACKs add 40 ms to every response.
    server_->set_tcp_nodelay(true);
    Routes();
  }

  bool tls() const { return !options_.tls_cert.empty(); }
  int Bind() { return server_->is_valid() ? server_->bind_to_any_port("127.0.0.1") : -1; }
  // Returns once the server's loop runs: httplib's stop() does nothing before that, so a Stop
  // right after Start would leave the thread listening and its join waiting forever.
  void Serve() {
    thread_ = std::thread([this] {
      server_->listen_after_bind();
      listen_returned_ = true;
    });
    while (!server_->is_running() && !listen_returned_) std::this_thread::yield();
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    node_changed_.notify_all();  // ends the watches in flight, which hold server threads
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  // Records a change of a node for the watches, with mu_ held: `node` carries its new
  // resourceVersion.
  void NodeChanged(const char* type, const json& node) {
    int64_t rv = std::atoll(StringAt(node, {"metadata", "resourceVersion"}).c_str());
    node_events_.push_back({rv, json{{"type", type}, {"object", node}}});
    node_changed_.notify_all();
  }

  // State, guarded by mu_.
  mutable std::mutex mu_;
  std::map<std::string, json> nodes_;        // by name
  std::map<std::string, json> pods_;         // by namespace/name
  std::map<std::string, json> pdbs_;         // by namespace/name
  std::map<std::string, json> jobs_;         // by namespace/name
  std::map<std::string, json> cronjobs_;     // by namespace/name
  std::map<std::string, json> events_;       // by namespace/name
  std::map<std::string, json> namespaces_;   // by name
  std::map<std::string, json> daemonsets_;   // by namespace/name
  std::map<std::string, json> leases_;       // by namespace/name
  std::map<std::string, std::string> logs_;  // pod logs, by namespace/name
  int64_t next_uid_ = 1;
  int64_t resource_version_ = 1000;
  struct Fault {
    std::string method, prefix;
    int status, count, retry_after;
  };
  std::vector<Fault> faults_;
  bool expire_continue_ = false;
  bool expire_watches_ = false;
  std::vector<Request> requests_;
  std::function<void(const Request&)> hook_;
  // Every node change, in resourceVersion order, for watches from any resourceVersion.
  std::vector<std::pair<int64_t, json>> node_events_;
  std::condition_variable node_changed_;
  bool stopping_ = false;

  std::string NextRv() { return std::to_string(++resource_version_); }

 private:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  // Authentication, recording, the test hook and injected faults, then the real handler.
  Handler Wrap(Handler inner) {
    return [this, inner](const httplib::Request& req, httplib::Response& res) {
      if (!options_.token.empty() &&
          req.get_header_value("Authorization") != "Bearer " + options_.token) {
        Reply(res, 401, StatusObject(401, "Unauthorized", "Unauthorized"));
        return;
      }
      Request record{req.method, req.path, {}, req.get_header_value("Content-Type"), req.body};
      for (const auto& [k, v] : req.params) record.query[k] = v;
      std::function<void(const Request&)> hook;
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(record);
        hook = hook_;
      }
      if (hook) hook(record);
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (Fault& f : faults_) {
          if (f.count > 0 && f.method == req.method && req.path.rfind(f.prefix, 0) == 0) {
            --f.count;
            if (f.retry_after >= 0) res.set_header("Retry-After", std::to_string(f.retry_after));
            std::string reason = f.status == 429 ? "TooManyRequests" : "InternalError";
            Reply(res, f.status, StatusObject(f.status, reason, "injected by the test"));
            return;
          }
        }
      }
      inner(req, res);
    };
  }

  // Serves one page of `items` (in key order, entries of a map that mu_ guards, held by the caller)
  // as the API server does: metadata.continue holds
  // base64({"v":"meta.k8s.io/v1","rv":N,"start":"<last key>\u0000"}) while more remain.
  // The items are written out from the map, not copied: the upgrade suite's hours of simulated
  // polling list the fleet thousands of times, and under AddressSanitizer two copies of every
  // listed object took a sixth of its CPU (317 -> 262 CPU-seconds without them).
  using Entry = std::map<std::string, json>::value_type;
  void ListPage(const httplib::Request& req, httplib::Response& res, const std::string& kind,
                const std::string& api_version, const std::vector<const Entry*>& items,
                bool selectors_used) {
    int limit = 0;
    if (req.has_param("limit")) limit = std::atoi(req.get_param_value("limit").c_str());
    if (limit <= 0) limit = kDefaultLimit;
    std::string start;
    int64_t rv = resource_version_;
    if (req.has_param("continue")) {
      if (expire_continue_) {
        Reply(res, 410,
              StatusObject(410, "Expired",
                           "The provided continue parameter is too old to display a consistent "
                           "list result. You can start a new list without the continue "
                           "parameter."));
        return;
      }
      std::optional<std::string> decoded = Unbase64(req.get_param_value("continue"));
      json token = decoded ? json::parse(*decoded, nullptr, false) : json();
      if (!token.is_object() || token.value("v", "") != "meta.k8s.io/v1" ||
          !token.contains("start")) {
        Reply(res, 400,
              StatusObject(400, "BadRequest",
                           "continue key is not valid: incorrect encoded start resourceVersion "
                           "(version meta.k8s.io/v1)"));
        return;
      }
      start = token["start"].get<std::string>();
      rv = token.value("rv", rv);
    }
    size_t i = 0;
    while (i < items.size() && items[i]->first < start) ++i;
    size_t first = i;
    // Lists put items without kind/apiVersion, after the list's own TypeMeta and ListMeta.
    std::string page = "[";
    for (; i < items.size() && static_cast<int>(i - first) < limit; ++i) {
      if (i > first) page += ',';
      page += '{';
      bool first_field = true;
      for (const auto& [field, value] : items[i]->second.items()) {
        if (field == "kind" || field == "apiVersion") continue;
        if (!first_field) page += ',';
        first_field = false;
        page += json(field).dump() + ':' + value.dump();
      }
      page += '}';
    }
    page += ']';
    json metadata = {{"resourceVersion", std::to_string(rv)}};
    if (i < items.size()) {
      json token = {{"v", "meta.k8s.io/v1"}, {"rv", rv}, {"start", items[i - 1]->first + '\0'}};
      metadata["continue"] = Base64(token.dump());
      // Like the real server, the count is only known without selectors.
      if (!selectors_used) metadata["remainingItemCount"] = items.size() - i;
    }
    // In the API server's (Go struct) order: kind first, items last.
    res.status = 200;
    res.set_content("{\"kind\":" + json(kind).dump() +
                        ",\"apiVersion\":" + json(api_version).dump() +
                        ",\"metadata\":" + metadata.dump() + ",\"items\":" + page + "}",
                    "application/json");
  }

  // Applies fieldSelector terms for pods/nodes; false (and a 400 reply) for unsupported fields.
  bool FieldSelects(const httplib::Request& req, httplib::Response& res, const json& obj,
                    const std::string& kind, bool& ok) {
    ok = true;
    if (!req.has_param("fieldSelector")) return true;
    for (const Requirement& r : ParseSelector(req.get_param_value("fieldSelector"))) {
      std::string have;
      // Events have their own selectable fields, as in the API server's event strategy.
      if (kind == "EventList" && r.key.rfind("involvedObject.", 0) == 0 &&
          (r.key == "involvedObject.kind" || r.key == "involvedObject.name" ||
           r.key == "involvedObject.namespace")) {
        have = StringAt(obj, {"involvedObject", r.key.substr(15).c_str()});
      } else if (kind == "EventList" && r.key == "reason") {
        have = StringAt(obj, {"reason"});
      } else if (r.key == "spec.nodeName" && kind == "PodList")
        have = StringAt(obj, {"spec", "nodeName"});
      else if (r.key == "status.phase" && kind == "PodList")
        have = StringAt(obj, {"status", "phase"});
      else if (r.key == "metadata.name")
        have = StringAt(obj, {"metadata", "name"});
      else if (r.key == "metadata.namespace")
        have = StringAt(obj, {"metadata", "namespace"});
      else {
        Reply(res, 400, StatusObject(400, "BadRequest", "field label not supported: " + r.key));
        ok = false;
        return false;
      }
      if (r.op == "=" && have != r.value) return false;
      if (r.op == "!=" && have == r.value) return false;
    }
    return true;
  }

  void ListOf(const httplib::Request& req, httplib::Response& res,
              const std::map<std::string, json>& from, const std::string& kind,
              const std::string& api_version, const std::string& ns) {
    std::vector<Requirement> labels;
    if (req.has_param("labelSelector"))
      labels = ParseSelector(req.get_param_value("labelSelector"));
    std::vector<const Entry*> items;
    std::lock_guard<std::mutex> lock(mu_);
    for (const Entry& entry : from) {
      const json& obj = entry.second;
      if (!ns.empty() && StringAt(obj, {"metadata", "namespace"}) != ns) continue;
      bool ok = true;
      if (!FieldSelects(req, res, obj, kind, ok)) {
        if (!ok) return;
        continue;
      }
      if (!MatchesLabels(labels, obj)) continue;
      items.push_back(&entry);
    }
    ListPage(req, res, kind, api_version, items,
             req.has_param("fieldSelector") || req.has_param("labelSelector"));
  }

  void Routes() {
    server_->Get(
        "/api/v1/nodes", Wrap([this](const httplib::Request& req, httplib::Response& res) {
          if (req.get_param_value("watch") == "true" || req.get_param_value("watch") == "1") {
            WatchNodes(req, res);
          } else {
            ListOf(req, res, nodes_, "NodeList", "v1", "");
          }
        }));
    server_->Get("/api/v1/pods", Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   ListOf(req, res, pods_, "PodList", "v1", "");
                 }));
    server_->Get(R"(/api/v1/namespaces/([^/]+)/pods)",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   ListOf(req, res, pods_, "PodList", "v1", req.matches[1]);
                 }));
    server_->Get("/apis/policy/v1/poddisruptionbudgets",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   ListOf(req, res, pdbs_, "PodDisruptionBudgetList", "policy/v1", "");
                 }));
    server_->Get("/apis/batch/v1/jobs",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   ListOf(req, res, jobs_, "JobList", "batch/v1", "");
                 }));
    server_->Get("/apis/batch/v1/cronjobs",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   ListOf(req, res, cronjobs_, "CronJobList", "batch/v1", "");
                 }));
    server_->Get("/api/v1/events",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   ListOf(req, res, events_, "EventList", "v1", "");
                 }));
    server_->Get(R"(/api/v1/namespaces/([^/]+))",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   GetOne(res, namespaces_, req.matches[1], "namespaces", req.matches[1]);
                 }));
    server_->Get("/apis/apps/v1/daemonsets",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   ListOf(req, res, daemonsets_, "DaemonSetList", "apps/v1", "");
                 }));
    server_->Post(R"(/api/v1/namespaces/([^/]+)/events)",
                  Wrap([this](const httplib::Request& req, httplib::Response& res) {
                    CreateEvent(req, res, req.matches[1]);
                  }));
    server_->Post(R"(/api/v1/namespaces/([^/]+)/pods)",
                  Wrap([this](const httplib::Request& req, httplib::Response& res) {
                    CreatePod(req, res, req.matches[1]);
                  }));
    server_->Delete(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
                    Wrap([this](const httplib::Request& req, httplib::Response& res) {
                      std::lock_guard<std::mutex> lock(mu_);
                      std::string key =
                          std::string(req.matches[1]) + "/" + std::string(req.matches[2]);
                      auto it = pods_.find(key);
                      if (it == pods_.end()) {
                        Reply(res, 404, NotFound("pods", req.matches[2]));
                        return;
                      }
                      // The kubelet ends the containers; the double has none, so it is gone now.
                      json gone = it->second;
                      pods_.erase(it);
                      logs_.erase(key);
                      NextRv();
                      Reply(res, 200, gone);
                    }));
    server_->Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/log)",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   std::lock_guard<std::mutex> lock(mu_);
                   std::string key =
                       std::string(req.matches[1]) + "/" + std::string(req.matches[2]);
                   if (!pods_.count(key)) {
                     Reply(res, 404, NotFound("pods", req.matches[2]));
                     return;
                   }
                   res.status = 200;
                   res.set_content(logs_[key], "text/plain");
                 }));
    server_->Post(R"(/apis/apps/v1/namespaces/([^/]+)/daemonsets)",
                  Wrap([this](const httplib::Request& req, httplib::Response& res) {
                    CreateDaemonSet(req, res, req.matches[1]);
                  }));
    server_->Get(R"(/apis/apps/v1/namespaces/([^/]+)/daemonsets/([^/]+))",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   GetOne(res, daemonsets_,
                          std::string(req.matches[1]) + "/" + std::string(req.matches[2]),
                          "daemonsets.apps", req.matches[2]);
                 }));
    server_->Put(R"(/apis/apps/v1/namespaces/([^/]+)/daemonsets/([^/]+))",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   ReplaceDaemonSet(req, res, req.matches[1], req.matches[2]);
                 }));
    server_->Delete(R"(/apis/apps/v1/namespaces/([^/]+)/daemonsets/([^/]+))",
                    Wrap([this](const httplib::Request& req, httplib::Response& res) {
                      std::lock_guard<std::mutex> lock(mu_);
                      auto it = daemonsets_.find(std::string(req.matches[1]) + "/" +
                                                 std::string(req.matches[2]));
                      if (it == daemonsets_.end()) {
                        Reply(res, 404, NotFound("daemonsets.apps", req.matches[2]));
                        return;
                      }
                      json details = {{"name", req.matches[2]},
                                      {"group", "apps"},
                                      {"kind", "daemonsets"},
                                      {"uid", StringAt(it->second, {"metadata", "uid"})}};
                      daemonsets_.erase(it);
                      NextRv();
                      Reply(res, 200,
                            {{"kind", "Status"},
                             {"apiVersion", "v1"},
                             {"metadata", json::object()},
                             {"status", "Success"},
                             {"details", details}});
                    }));
    server_->Post(R"(/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases)",
                  Wrap([this](const httplib::Request& req, httplib::Response& res) {
                    CreateLease(req, res, req.matches[1]);
                  }));
    server_->Get(R"(/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases/([^/]+))",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   GetOne(res, leases_,
                          std::string(req.matches[1]) + "/" + std::string(req.matches[2]),
                          "leases.coordination.k8s.io", req.matches[2]);
                 }));
    server_->Put(R"(/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases/([^/]+))",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   ReplaceLease(req, res, req.matches[1], req.matches[2]);
                 }));
    server_->Delete(
        R"(/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases/([^/]+))",
        Wrap([this](const httplib::Request& req, httplib::Response& res) {
          std::lock_guard<std::mutex> lock(mu_);
          auto it = leases_.find(std::string(req.matches[1]) + "/" + std::string(req.matches[2]));
          if (it == leases_.end()) {
            Reply(res, 404, NotFound("leases.coordination.k8s.io", req.matches[2]));
            return;
          }
          json gone = Deleted("leases.coordination.k8s.io", req.matches[2], it->second);
          leases_.erase(it);
          NextRv();
          Reply(res, 200, gone);
        }));
    server_->Post(R"(/apis/batch/v1/namespaces/([^/]+)/jobs)",
                  Wrap([this](const httplib::Request& req, httplib::Response& res) {
                    CreateJob(req, res, req.matches[1]);
                  }));
    server_->Get(R"(/apis/batch/v1/namespaces/([^/]+)/jobs)",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   ListOf(req, res, jobs_, "JobList", "batch/v1", req.matches[1]);
                 }));
    server_->Get(R"(/apis/batch/v1/namespaces/([^/]+)/jobs/([^/]+))",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   GetOne(res, jobs_,
                          std::string(req.matches[1]) + "/" + std::string(req.matches[2]),
                          "jobs.batch", req.matches[2]);
                 }));
    server_->Delete(R"(/apis/batch/v1/namespaces/([^/]+)/jobs/([^/]+))",
                    Wrap([this](const httplib::Request& req, httplib::Response& res) {
                      DeleteJob(req, res, req.matches[1], req.matches[2]);
                    }));
    server_->Get(R"(/api/v1/nodes/([^/]+))",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   GetOne(res, nodes_, req.matches[1], "nodes", req.matches[1]);
                 }));
    server_->Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
                 Wrap([this](const httplib::Request& req, httplib::Response& res) {
                   GetOne(res, pods_,
                          std::string(req.matches[1]) + "/" + std::string(req.matches[2]), "pods",
                          req.matches[2]);
                 }));
    server_->Patch(
        R"(/api/v1/nodes/([^/]+))",
        Wrap([this](const httplib::Request& req, httplib::Response& res) { PatchNode(req, res); }));
    server_->Patch(
        R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
        Wrap([this](const httplib::Request& req, httplib::Response& res) { PatchPod(req, res); }));
    server_->Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction)",
                  Wrap([this](const httplib::Request& req, httplib::Response& res) {
                    Evict(req, res, req.matches[1], req.matches[2]);
                  }));
  }

  // GET of one object: 200 with it, or the API server's 404 Status.
  void GetOne(httplib::Response& res, const std::map<std::string, json>& from,
              const std::string& key, const std::string& resource, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = from.find(key);
    if (it == from.end()) {
      Reply(res, 404, NotFound(resource, name));
    } else {
      Reply(res, 200, it->second);
    }
  }

  // Status details name the group and the resource apart: "leases.coordination.k8s.io" is
  // {"group": "coordination.k8s.io", "kind": "leases"}, "pods" has no group.
  static json Details(const std::string& qualified, const std::string& name) {
    size_t dot = qualified.find('.');
    json details = {{"name", name}, {"kind", qualified.substr(0, dot)}};
    if (dot != std::string::npos) details["group"] = qualified.substr(dot + 1);
    return details;
  }

  static json NotFound(const std::string& resource, const std::string& name) {
    return StatusObject(404, "NotFound", resource + " \"" + name + "\" not found",
                        Details(resource, name));
  }

  static json AlreadyExists(const std::string& resource, const std::string& name) {
    return StatusObject(409, "AlreadyExists", resource + " \"" + name + "\" already exists",
                        Details(resource, name));
  }

  static json Conflict(const std::string& resource, const std::string& name,
                       const std::string& why) {
    return StatusObject(
        409, "Conflict",
        "Operation cannot be fulfilled on " + resource + " \"" + name + "\": " + why,
        Details(resource, name));
  }

  static constexpr const char* kModified =
      "the object has been modified; please apply your changes to the latest version and try "
      "again";

  // A validation failure of one field, as the API server words it: `kind` is Kind.group for
  // what the strategy validates ("Job.batch"), resource.group for the store's own resourceVersion
  // check ("leases.coordination.k8s.io").
  static json Invalid(const std::string& kind, const std::string& name, const std::string& field,
                      const std::string& reason, const std::string& detail) {
    json details = Details(kind, name);
    details["causes"] = {{{"reason", reason}, {"message", detail}, {"field", field}}};
    return StatusObject(422, "Invalid",
                        kind + " \"" + name + "\" is invalid: " + field + ": " + detail, details);
  }

  // What a DELETE answers once the object is gone (no finalizers hold it).
  static json Deleted(const std::string& resource, const std::string& name, const json& object) {
    json details = Details(resource, name);
    details["uid"] = StringAt(object, {"metadata", "uid"});
    return {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"metadata", json::object()},
            {"status", "Success"},
            {"details", details}};
  }

  // The decoder's checks of a body POSTed or PUT to namespace `ns`: JSON of the right kind and
  // apiVersion, and no other namespace. The object comes back with metadata and its namespace.
  std::optional<json> Decode(const httplib::Request& req, httplib::Response& res,
                             const std::string& ns, const char* kind, const char* api_version) {
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || body.value("kind", "") != kind ||
        body.value("apiVersion", "") != api_version) {
      Reply(res, 400,
            StatusObject(400, "BadRequest", "the body of the request was in an unknown format"));
      return std::nullopt;
    }
    if (!body.contains("metadata") || !body["metadata"].is_object())
      body["metadata"] = json::object();
    std::string body_ns = StringAt(body, {"metadata", "namespace"});
    if (!body_ns.empty() && body_ns != ns) {
      Reply(res, 400,
            StatusObject(400, "BadRequest",
                         "the namespace of the provided object does not match the namespace "
                         "sent on the request"));
      return std::nullopt;
    }
    body["metadata"]["namespace"] = ns;
    return body;
  }

  // A PUT's body names the object of its URL.
  bool NameMatches(httplib::Response& res, const json& body, const std::string& name) {
    if (StringAt(body, {"metadata", "name"}) == name) return true;
    Reply(res, 400,
          StatusObject(400, "BadRequest",
                       "the name of the object (" + StringAt(body, {"metadata", "name"}) +
                           ") does not match the name on the URL (" + name + ")"));
    return false;
  }

  // The store's optimistic concurrency on update: the resourceVersion the client read must still
  // be the stored one.
  bool VersionCurrent(httplib::Response& res, const json& body, const json& stored,
                      const std::string& resource, const std::string& name) {
    std::string rv = StringAt(body, {"metadata", "resourceVersion"});
    if (rv.empty()) {
      Reply(res, 422,
            Invalid(resource, name, "metadata.resourceVersion", "FieldValueInvalid",
                    "Invalid value: 0x0: must be specified for an update"));
      return false;
    }
    if (rv != StringAt(stored, {"metadata", "resourceVersion"})) {
      Reply(res, 409, Conflict(resource, name, kModified));
      return false;
    }
    return true;
  }

  // The checks of the API server's create path that a client can trip over.
  std::optional<json> ReadDaemonSet(const httplib::Request& req, httplib::Response& res,
                                    const std::string& ns) {
    std::optional<json> decoded = Decode(req, res, ns, "DaemonSet", "apps/v1");
    if (!decoded) return std::nullopt;
    json& body = *decoded;
    std::string name = StringAt(body, {"metadata", "name"});
    const json* template_labels = Find(body, {"spec", "template", "metadata", "labels"});
    const json* selector = Find(body, {"spec", "selector", "matchLabels"});
    if (name.empty() || !template_labels || !selector) {
      Reply(res, 422,
            StatusObject(422, "Invalid",
                         "DaemonSet.apps \"" + name +
                             "\" is invalid: metadata.name, spec.selector and "
                             "spec.template.metadata.labels are required"));
      return std::nullopt;
    }
    for (auto& [k, v] : selector->items()) {
      if (!template_labels->contains(k) || (*template_labels)[k] != v) {
        Reply(res, 422,
              StatusObject(422, "Invalid",
                           "DaemonSet.apps \"" + name +
                               "\" is invalid: spec.template.metadata.labels: Invalid value: "
                               "`selector` does not match template `labels`"));
        return std::nullopt;
      }
    }
    return body;
  }

  // A pod as the API server stores it on create: Pending, unscheduled unless spec.nodeName is set.
  void CreatePod(const httplib::Request& req, httplib::Response& res, const std::string& ns) {
    json pod = json::parse(req.body, nullptr, false);
    if (!pod.is_object() || pod.value("kind", "") != "Pod" || pod.value("apiVersion", "") != "v1") {
      Reply(res, 400,
            StatusObject(400, "BadRequest", "the body of the request was in an unknown format"));
      return;
    }
    std::string name = StringAt(pod, {"metadata", "name"});
    const json* containers = Find(pod, {"spec", "containers"});
    if (name.empty() || !containers || !containers->is_array() || containers->empty()) {
      Reply(res, 422,
            StatusObject(
                422, "Invalid",
                "Pod \"" + name + "\" is invalid: metadata.name and spec.containers are required"));
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (pods_.count(ns + "/" + name)) {
      Reply(res, 409,
            StatusObject(409, "AlreadyExists", "pods \"" + name + "\" already exists",
                         {{"name", name}, {"kind", "pods"}}));
      return;
    }
    pod["metadata"]["namespace"] = ns;
    pod["metadata"]["uid"] =
        "90d5a000-0000-4000-8000-" + std::to_string(100000000000 + next_uid_++);
    pod["metadata"]["resourceVersion"] = NextRv();
    pod["metadata"]["creationTimestamp"] = "2024-05-06T10:00:00Z";
    pod["status"] = {{"phase", "Pending"}};
    pods_[ns + "/" + name] = pod;
    Reply(res, 201, pod);
  }

  void CreateDaemonSet(const httplib::Request& req, httplib::Response& res, const std::string& ns) {
    std::optional<json> ds = ReadDaemonSet(req, res, ns);
    if (!ds) return;
    std::string name = StringAt(*ds, {"metadata", "name"});
    std::lock_guard<std::mutex> lock(mu_);
    if (daemonsets_.count(ns + "/" + name)) {
      Reply(res, 409,
            StatusObject(409, "AlreadyExists", "daemonsets.apps \"" + name + "\" already exists",
                         {{"name", name}, {"group", "apps"}, {"kind", "daemonsets"}}));
      return;
    }
    (*ds)["metadata"]["uid"] =
        "d5e7a000-0000-4000-8000-" + std::to_string(100000000000 + next_uid_++);
    (*ds)["metadata"]["resourceVersion"] = NextRv();
    (*ds)["metadata"]["generation"] = 1;
    (*ds)["metadata"]["creationTimestamp"] = "2024-05-06T10:00:00Z";
    (*ds)["status"] = {{"currentNumberScheduled", 0},
                       {"desiredNumberScheduled", 0},
                       {"numberMisscheduled", 0},
                       {"numberReady", 0}};
    daemonsets_[ns + "/" + name] = *ds;
    Reply(res, 201, *ds);
  }

  void ReplaceDaemonSet(const httplib::Request& req, httplib::Response& res, const std::string& ns,
                        const std::string& name) {
    std::optional<json> ds = ReadDaemonSet(req, res, ns);
    if (!ds || !NameMatches(res, *ds, name)) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = daemonsets_.find(ns + "/" + name);
    if (it == daemonsets_.end()) {
      Reply(res, 404, NotFound("daemonsets.apps", name));
      return;
    }
    if (!VersionCurrent(res, *ds, it->second, "daemonsets.apps", name)) return;
    json& stored = it->second;
    // A PUT of the main resource changes spec and metadata; status belongs to the controller.
    bool spec_changed = stored["spec"] != (*ds)["spec"];
    json replaced = *ds;
    replaced["status"] = stored["status"];
    replaced["metadata"]["uid"] = stored["metadata"]["uid"];
    replaced["metadata"]["creationTimestamp"] = stored["metadata"]["creationTimestamp"];
    replaced["metadata"]["generation"] =
        stored["metadata"].value("generation", 1) + (spec_changed ? 1 : 0);
    replaced["metadata"]["resourceVersion"] = NextRv();
    stored = replaced;
    Reply(res, 200, stored);
  }

  // What the store fills in on create, with mu_ held.
  json StoreNewLease(json lease, const std::string& ns, const std::string& name) {
    lease["metadata"]["uid"] =
        "1ea5e000-0000-4000-8000-" + std::to_string(100000000000 + next_uid_++);
    lease["metadata"]["resourceVersion"] = NextRv();
    lease["metadata"]["creationTimestamp"] = "2024-05-06T10:00:00Z";
    leases_[ns + "/" + name] = lease;
    return lease;
  }

  void CreateLease(const httplib::Request& req, httplib::Response& res, const std::string& ns) {
    std::optional<json> lease = Decode(req, res, ns, "Lease", "coordination.k8s.io/v1");
    if (!lease) return;
    std::string name = StringAt(*lease, {"metadata", "name"});
    if (name.empty()) {
      Reply(res, 422,
            Invalid("Lease.coordination.k8s.io", name, "metadata.name", "FieldValueRequired",
                    "Required value: name or generateName is required"));
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (leases_.count(ns + "/" + name)) {
      Reply(res, 409, AlreadyExists("leases.coordination.k8s.io", name));
      return;
    }
    Reply(res, 201, StoreNewLease(*lease, ns, name));
  }

  // A PUT with the store's optimistic concurrency: the resourceVersion the client read must still
  // be the stored one. Unlike a DaemonSet, a Lease may be created by a PUT (the lease strategy
  // allows create on update), unless the body names the uid of an object that is gone.
  void ReplaceLease(const httplib::Request& req, httplib::Response& res, const std::string& ns,
                    const std::string& name) {
    std::optional<json> lease = Decode(req, res, ns, "Lease", "coordination.k8s.io/v1");
    if (!lease || !NameMatches(res, *lease, name)) return;
    const std::string resource = "leases.coordination.k8s.io";
    std::string uid = StringAt(*lease, {"metadata", "uid"});
    std::lock_guard<std::mutex> lock(mu_);
    auto it = leases_.find(ns + "/" + name);
    std::string stored_uid = it == leases_.end() ? "" : StringAt(it->second, {"metadata", "uid"});
    if (!uid.empty() && uid != stored_uid) {
      // The storage layer's precondition error, passed through as the Conflict's cause.
      Reply(res, 409,
            Conflict(resource, name,
                     "StorageError: invalid object, Code: 4, Key: /registry/leases/" + ns + "/" +
                         name +
                         ", ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in "
                         "precondition: " +
                         uid + ", UID in object meta: " + stored_uid));
      return;
    }
    if (it == leases_.end()) {
      Reply(res, 201, StoreNewLease(*lease, ns, name));
      return;
    }
    if (!VersionCurrent(res, *lease, it->second, resource, name)) return;
    json replaced = *lease;
    replaced["metadata"]["uid"] = it->second["metadata"]["uid"];
    replaced["metadata"]["creationTimestamp"] = it->second["metadata"]["creationTimestamp"];
    replaced["metadata"]["resourceVersion"] = NextRv();
    it->second = replaced;
    Reply(res, 200, replaced);
  }

  // A Job as the create path stores it: defaulted, its pods selected by the controller-uid label
  // the API server generates, and an empty status for the Job controller to fill.
  void CreateJob(const httplib::Request& req, httplib::Response& res, const std::string& ns) {
    std::optional<json> decoded = Decode(req, res, ns, "Job", "batch/v1");
    if (!decoded) return;
    json& job = *decoded;
    std::string name = StringAt(job, {"metadata", "name"});
    if (name.empty()) {
      Reply(res, 422,
            Invalid("Job.batch", name, "metadata.name", "FieldValueRequired",
                    "Required value: name or generateName is required"));
      return;
    }
    const json* containers = Find(job, {"spec", "template", "spec", "containers"});
    if (!containers || !containers->is_array() || containers->empty()) {
      Reply(res, 422,
            Invalid("Job.batch", name, "spec.template.spec.containers", "FieldValueRequired",
                    "Required value"));
      return;
    }
    // An unset restartPolicy is defaulted to Always, which a Job refuses the same way.
    std::string restart = StringAt(job, {"spec", "template", "spec", "restartPolicy"});
    if (restart.empty() || restart == "Always") {
      Reply(res, 422,
            Invalid("Job.batch", name, "spec.template.spec.restartPolicy", "FieldValueRequired",
                    "Required value: valid values: \"OnFailure\", \"Never\""));
      return;
    }
    if (restart != "OnFailure" && restart != "Never") {
      Reply(res, 422,
            Invalid("Job.batch", name, "spec.template.spec.restartPolicy", "FieldValueNotSupported",
                    "Unsupported value: " + json(restart).dump() +
                        ": supported values: \"OnFailure\", \"Never\""));
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (jobs_.count(ns + "/" + name)) {
      Reply(res, 409, AlreadyExists("jobs.batch", name));
      return;
    }
    std::string uid = "10b5a000-0000-4000-8000-" + std::to_string(100000000000 + next_uid_++);
    json& spec = job["spec"];
    json& pod_meta = spec["template"]["metadata"];
    if (!pod_meta.is_object()) pod_meta = json::object();
    if (!job["metadata"].contains("labels") && pod_meta.contains("labels"))
      job["metadata"]["labels"] = pod_meta["labels"];
    if (!spec.value("manualSelector", false)) {
      pod_meta["labels"]["batch.kubernetes.io/controller-uid"] = uid;
      pod_meta["labels"]["batch.kubernetes.io/job-name"] = name;
      pod_meta["labels"]["controller-uid"] = uid;
      pod_meta["labels"]["job-name"] = name;
      spec["selector"] = {{"matchLabels", {{"batch.kubernetes.io/controller-uid", uid}}}};
    }
    for (const auto& [field, value] :
         std::initializer_list<std::pair<const char*, json>>{{"backoffLimit", 6},
                                                             {"completions", 1},
                                                             {"parallelism", 1},
                                                             {"completionMode", "NonIndexed"},
                                                             {"suspend", false}}) {
      if (!spec.contains(field)) spec[field] = value;
    }
    job["metadata"]["uid"] = uid;
    job["metadata"]["resourceVersion"] = NextRv();
    job["metadata"]["generation"] = 1;
    job["metadata"]["creationTimestamp"] = "2024-05-06T10:00:00Z";
    job["status"] = json::object();
    jobs_[ns + "/" + name] = job;
    Reply(res, 201, job);
  }

  // Without a propagationPolicy a batch/v1 Job's pods are orphaned, as the API server warns;
  // Background and Foreground remove the pods that the Job owns (at once here, where the garbage
  // collector would shortly after).
  void DeleteJob(const httplib::Request& req, httplib::Response& res, const std::string& ns,
                 const std::string& name) {
    std::string policy = req.get_param_value("propagationPolicy");
    json options = json::parse(req.body, nullptr, false);
    if (policy.empty() && options.is_object()) policy = options.value("propagationPolicy", "");
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(ns + "/" + name);
    if (it == jobs_.end()) {
      Reply(res, 404, NotFound("jobs.batch", name));
      return;
    }
    std::string uid = StringAt(it->second, {"metadata", "uid"});
    if (policy.empty()) {
      res.set_header("Warning",
                     "299 - \"child pods are preserved by default when jobs are deleted; set "
                     "propagationPolicy=Background to remove them or set propagationPolicy=Orphan "
                     "to suppress this warning\"");
    } else if (policy == "Background" || policy == "Foreground") {
      for (auto pod = pods_.begin(); pod != pods_.end();) {
        const json* owners = Find(pod->second, {"metadata", "ownerReferences"});
        bool owned = StringAt(pod->second, {"metadata", "namespace"}) == ns && owners &&
                     owners->is_array() &&
                     std::any_of(owners->begin(), owners->end(),
                                 [&](const json& o) { return o.value("uid", "") == uid; });
        if (owned) {
          logs_.erase(pod->first);
          pod = pods_.erase(pod);
        } else {
          ++pod;
        }
      }
    }
    json gone = Deleted("jobs.batch", name, it->second);
    jobs_.erase(it);
    NextRv();
    Reply(res, 200, gone);
  }

  // A node watch as the API server streams it: one JSON event per line ({"type": "MODIFIED",
  // "object": {...}}) for every change after `resourceVersion` that the fieldSelector selects,
  // until timeoutSeconds pass (default 30 here) or the double stops.
  void WatchNodes(const httplib::Request& req, httplib::Response& res) {
    int64_t since = std::atoll(req.get_param_value("resourceVersion").c_str());
    int seconds = req.has_param("timeoutSeconds")
                      ? std::atoi(req.get_param_value("timeoutSeconds").c_str())
                      : 30;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    httplib::Request selector_only;
    if (req.has_param("fieldSelector")) {
      selector_only.params.emplace("fieldSelector", req.get_param_value("fieldSelector"));
    }
    auto sent = std::make_shared<int64_t>(since);
    res.status = 200;
    bool expired;
    {
      std::lock_guard<std::mutex> lock(mu_);
      expired = expire_watches_;
    }
    if (expired) {
      // As the API server: HTTP 200, then one ERROR event carrying the Status, then the end.
      json gone = {{"type", "ERROR"},
                   {"object", StatusObject(410, "Expired",
                                           "too old resource version: " + std::to_string(since))}};
      res.set_content(gone.dump() + "\n", "application/json;stream=watch");
      return;
    }
    // Not application/json, which httplib would gzip for a client that accepts it, holding the
    // events in the compressor; the API server does not compress watches either.
    res.set_chunked_content_provider(
        "application/json;stream=watch",
        [this, deadline, selector_only, sent](size_t, httplib::DataSink& sink) {
          std::string lines;
          {
            std::unique_lock<std::mutex> lock(mu_);
            node_changed_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() +
                                                                  std::chrono::milliseconds(200)));
            if (stopping_ || std::chrono::steady_clock::now() >= deadline) {
              sink.done();
              return true;
            }
            for (const auto& [rv, event] : node_events_) {
              if (rv <= *sent) continue;
              *sent = rv;
              httplib::Response ignored;
              bool ok = true;
              if (!FieldSelects(selector_only, ignored, event["object"], "NodeList", ok)) continue;
              lines += event.dump() + "\n";
            }
          }
          return lines.empty() || sink.write(lines.data(), lines.size());
        });
  }

  // POST of a core/v1 Event: named by metadata.name, or generateName plus a suffix.
  void CreateEvent(const httplib::Request& req, httplib::Response& res, const std::string& ns) {
    json event = json::parse(req.body, nullptr, false);
    if (!event.is_object() || event.value("kind", "") != "Event" ||
        !event.contains("involvedObject")) {
      Reply(res, 400, StatusObject(400, "BadRequest", "not an Event with an involvedObject"));
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    std::string name = StringAt(event, {"metadata", "name"});
    if (name.empty())
      name = StringAt(event, {"metadata", "generateName"}) + std::to_string(next_uid_++);
    event["metadata"]["name"] = name;
    event["metadata"]["namespace"] = ns;
    event["metadata"]["resourceVersion"] = NextRv();
    events_[ns + "/" + name] = event;
    Reply(res, 201, event);
  }

  void PatchNode(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    if (const json* patched =
            PatchLocked(req, res, nodes_, req.matches[1], "nodes", req.matches[1])) {
      NodeChanged("MODIFIED", *patched);
    }
  }

  void PatchPod(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    PatchLocked(req, res, pods_, std::string(req.matches[1]) + "/" + std::string(req.matches[2]),
                "pods", req.matches[2]);
  }

  // Applies a PATCH to the object at `key` and answers it; returns the patched object, or null
  // when the answer was an error.
  const json* PatchLocked(const httplib::Request& req, httplib::Response& res,
                          std::map<std::string, json>& objects, const std::string& key,
                          const std::string& resource, const std::string& name) {
    std::string type = req.get_header_value("Content-Type");
    json patch = json::parse(req.body, nullptr, false);
    if (patch.is_discarded()) {
      Reply(res, 400,
            StatusObject(400, "BadRequest", "the body of the request was in an unknown format"));
      return nullptr;
    }
    auto it = objects.find(key);
    if (it == objects.end()) {
      Reply(res, 404, NotFound(resource, name));
      return nullptr;
    }
    json patched = it->second;
    if (type == "application/merge-patch+json" ||
        type == "application/strategic-merge-patch+json") {
      // For the fields gpunode patches (label and annotation maps, scalars, the atomic taints
      // list) a strategic merge patch behaves as a JSON merge patch.
      patched.merge_patch(patch);
    } else if (type == "application/json-patch+json") {
      try {
        patched = patched.patch(patch);
      } catch (const json::exception& e) {
        Reply(res, 422, StatusObject(422, "Invalid", e.what()));
        return nullptr;
      }
    } else {
      Reply(res, 415,
            StatusObject(415, "UnsupportedMediaType",
                         "the body of the request was in an unknown format - accepted "
                         "media types include: application/json-patch+json, "
                         "application/merge-patch+json, "
                         "application/apply-patch+yaml"));
      return nullptr;
    }
    patched["metadata"]["resourceVersion"] = NextRv();
    it->second = patched;
    Reply(res, 200, patched);
    return &it->second;
  }

  void Evict(const httplib::Request& req, httplib::Response& res, const std::string& ns,
             const std::string& name) {
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || body.value("kind", "") != "Eviction" ||
        (body.value("apiVersion", "") != "policy/v1" &&
         body.value("apiVersion", "") != "policy/v1beta1") ||
        StringAt(body, {"metadata", "name"}) != name) {
      Reply(res, 400,
            StatusObject(400, "BadRequest", "name in URL does not match name in Eviction object"));
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto pod = pods_.find(ns + "/" + name);
    if (pod == pods_.end()) {
      Reply(res, 404, NotFound("pods", name));
      return;
    }
    std::string phase = StringAt(pod->second, {"status", "phase"});
    bool skip_budget = phase == "Succeeded" || phase == "Failed" || phase == "Pending" ||
                       Find(pod->second, {"metadata", "deletionTimestamp"}) != nullptr;
    std::vector<json*> budgets;
    for (auto& [key, pdb] : pdbs_) {
      if (StringAt(pdb, {"metadata", "namespace"}) == ns && PdbSelects(pdb, pod->second)) {
        budgets.push_back(&pdb);
      }
    }
    if (!skip_budget && budgets.size() > 1) {
      Reply(res, 500,
            StatusObject(500, "InternalError",
                         "This pod has more than one PodDisruptionBudget, which the "
                         "eviction subresource does not support."));
      return;
    }
    if (!skip_budget && budgets.size() == 1) {
      json& pdb = *budgets.front();
      int allowed = pdb["status"].value("disruptionsAllowed", 0);
      if (allowed <= 0) {
        std::string cause = "The disruption budget " + StringAt(pdb, {"metadata", "name"}) +
                            " needs " + std::to_string(pdb["status"].value("desiredHealthy", 0)) +
                            " healthy pods and has " +
                            std::to_string(pdb["status"].value("currentHealthy", 0)) + " currently";
        Reply(res, 429,
              StatusObject(429, "TooManyRequests",
                           "Cannot evict pod as it would violate the pod's disruption budget.",
                           {{"causes", {{{"reason", "DisruptionBudget"}, {"message", cause}}}}}));
        return;
      }
      pdb["status"]["disruptionsAllowed"] = allowed - 1;
    }
    pods_.erase(pod);
    NextRv();
    json ok = {{"kind", "Status"},
               {"apiVersion", "v1"},
               {"metadata", json::object()},
               {"status", "Success"},
               {"code", 201}};
    Reply(res, 201, ok);
  }

  Options options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
};

ApiServerDouble::ApiServerDouble(Options options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
ApiServerDouble::~ApiServerDouble() { Stop(); }

bool ApiServerDouble::Start() {
  port_ = impl_->Bind();
  if (port_ <= 0) return false;
  impl_->Serve();
  return true;
}

void ApiServerDouble::Stop() { impl_->Stop(); }

std::string ApiServerDouble::PlainKubeconfig() const {
  return "apiVersion: v1\nkind: Config\n"
         "clusters: [{name: double, cluster: {server: \"" +
         url() +
         "\"}}]\n"
         "users: [{name: test, user: {}}]\n"
         "contexts: [{name: double, context: {cluster: double, user: test}}]\n"
         "current-context: double\n";
}

void ApiServerDouble::ExpireWatches(bool expire) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->expire_watches_ = expire;
}

std::string ApiServerDouble::url() const {
  return std::string(impl_->tls() ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

void ApiServerDouble::AddObject(nlohmann::json object) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  std::string kind = object.value("kind", "");
  std::string name = StringAt(object, {"metadata", "name"});
  std::string ns = StringAt(object, {"metadata", "namespace"});
  object["metadata"]["resourceVersion"] = impl_->NextRv();
  if (kind == "Node") {
    impl_->NodeChanged(impl_->nodes_.contains(name) ? "MODIFIED" : "ADDED", object);
    impl_->nodes_[name] = std::move(object);
  } else if (kind == "Pod") {
    impl_->pods_[ns + "/" + name] = std::move(object);
  } else if (kind == "PodDisruptionBudget") {
    impl_->pdbs_[ns + "/" + name] = std::move(object);
  } else if (kind == "Job") {
    impl_->jobs_[ns + "/" + name] = std::move(object);
  } else if (kind == "CronJob") {
    impl_->cronjobs_[ns + "/" + name] = std::move(object);
  } else if (kind == "Event") {
    impl_->events_[ns + "/" + name] = std::move(object);
  } else if (kind == "Namespace") {
    impl_->namespaces_[name] = std::move(object);
  } else if (kind == "DaemonSet") {
    impl_->daemonsets_[ns + "/" + name] = std::move(object);
  } else if (kind == "Lease") {
    impl_->leases_[ns + "/" + name] = std::move(object);
  }
}

bool ApiServerDouble::LoadList(const std::string& path) {
  std::ifstream in(path);
  json list = json::parse(in, nullptr, false);
  if (!list.is_object() || !list.contains("items")) return false;
  for (json& item : list["items"]) AddObject(item);
  return true;
}

std::optional<nlohmann::json> ApiServerDouble::Node(const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  auto it = impl_->nodes_.find(name);
  if (it == impl_->nodes_.end()) return std::nullopt;
  return it->second;
}

std::optional<nlohmann::json> ApiServerDouble::Pod(const std::string& ns,
                                                   const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  auto it = impl_->pods_.find(ns + "/" + name);
  if (it == impl_->pods_.end()) return std::nullopt;
  return it->second;
}

void ApiServerDouble::SetPodPhase(const std::string& ns, const std::string& name,
                                  const std::string& phase) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  auto it = impl_->pods_.find(ns + "/" + name);
  if (it != impl_->pods_.end()) it->second["status"]["phase"] = phase;
}

void ApiServerDouble::DeletePod(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->pods_.erase(ns + "/" + name);
}

void ApiServerDouble::SetPodLog(const std::string& ns, const std::string& name,
                                const std::string& log) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->logs_[ns + "/" + name] = log;
}

void ApiServerDouble::SetDisruptionsAllowed(const std::string& ns, const std::string& name,
                                            int allowed) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  auto it = impl_->pdbs_.find(ns + "/" + name);
  if (it != impl_->pdbs_.end()) it->second["status"]["disruptionsAllowed"] = allowed;
}

std::optional<nlohmann::json> ApiServerDouble::DaemonSet(const std::string& ns,
                                                         const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  auto it = impl_->daemonsets_.find(ns + "/" + name);
  if (it == impl_->daemonsets_.end()) return std::nullopt;
  return it->second;
}

void ApiServerDouble::SetDaemonSetStatus(const std::string& ns, const std::string& name,
                                         int desired, int ready, int updated) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  auto it = impl_->daemonsets_.find(ns + "/" + name);
  if (it == impl_->daemonsets_.end()) return;
  json& ds = it->second;
  ds["status"]["desiredNumberScheduled"] = desired;
  ds["status"]["currentNumberScheduled"] = desired;
  ds["status"]["numberReady"] = ready;
  ds["status"]["numberAvailable"] = ready;
  ds["status"]["updatedNumberScheduled"] = updated;
  ds["status"]["observedGeneration"] = ds["metadata"].value("generation", 1);
  ds["metadata"]["resourceVersion"] = impl_->NextRv();
}

std::optional<nlohmann::json> ApiServerDouble::Job(const std::string& ns,
                                                   const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  auto it = impl_->jobs_.find(ns + "/" + name);
  if (it == impl_->jobs_.end()) return std::nullopt;
  return it->second;
}

void ApiServerDouble::SetJobStatus(const std::string& ns, const std::string& name,
                                   nlohmann::json status) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  auto it = impl_->jobs_.find(ns + "/" + name);
  if (it == impl_->jobs_.end()) return;
  it->second["status"] = std::move(status);
  it->second["metadata"]["resourceVersion"] = impl_->NextRv();
}

std::optional<nlohmann::json> ApiServerDouble::Lease(const std::string& ns,
                                                     const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  auto it = impl_->leases_.find(ns + "/" + name);
  if (it == impl_->leases_.end()) return std::nullopt;
  return it->second;
}

void ApiServerDouble::FailNext(const std::string& method, const std::string& path_prefix,
                               int status, int count, int retry_after_seconds) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->faults_.push_back({method, path_prefix, status, count, retry_after_seconds});
}

void ApiServerDouble::ExpireContinueTokens(bool expire) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->expire_continue_ = expire;
}

void ApiServerDouble::OnRequest(std::function<void(const Request&)> hook) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->hook_ = std::move(hook);
}

std::vector<ApiServerDouble::Request> ApiServerDouble::Requests() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->requests_;
}

int ApiServerDouble::CountRequests(const std::string& method,
                                   const std::string& path_prefix) const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return static_cast<int>(std::count_if(
      impl_->requests_.begin(), impl_->requests_.end(),
      [&](const Request& r) { return r.method == method && r.path.rfind(path_prefix, 0) == 0; }));
}

}  // namespace gpunode::testing
