#include "dra/resource_slice.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "cdi/spec_file.h"
#include "core/json_field.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "spdlog/spdlog.h"

namespace gpunode::dra {
namespace {

using ordered = nlohmann::ordered_json;
using json = nlohmann::json;

constexpr char kSlicesPath[] = "/apis/resource.k8s.io/v1/resourceslices";

ordered DeviceEntry(const gpu::DraDevice& device) {
  ordered entry = {{"name", device.name}, {"attributes", device.attributes}};
  if (!device.capacity.empty()) entry["capacity"] = device.capacity;
  if (!device.taints.empty()) {
    ordered taints = ordered::array();
    for (const gpu::DeviceTaint& taint : device.taints) {
      ordered t = {{"key", taint.key}};
      if (!taint.value.empty()) t["value"] = taint.value;
      t["effect"] = taint.effect;
      taints.push_back(std::move(t));
    }
    entry["taints"] = std::move(taints);
  }
  return entry;
}

// The API server stamps each taint with timeAdded; what we want carries none, so the stored
// devices are compared without it.
json WithoutTaintTimes(json devices) {
  if (!devices.is_array()) return devices;
  for (json& device : devices) {
    json* taints = device.is_object() && device.contains("taints") ? &device["taints"] : nullptr;
    if (taints == nullptr || !taints->is_array()) continue;
    for (json& taint : *taints) {
      if (taint.is_object()) taint.erase("timeAdded");
    }
  }
  return devices;
}

// A taint that stays keeps the time it was first added: an operator reading the slice sees since
// when a device is out, not when the slice was last rewritten.
void CarryTaintTimes(const std::vector<json>& existing, ordered& slice) {
  // "<device>\n<key>\n<value>\n<effect>" -> timeAdded, from the stored slices.
  std::map<std::string, std::string> added;
  auto id = [](std::string_view device, const std::string& key, const std::string& value,
               const std::string& effect) {
    return core::StrCat(device, "\n", key, "\n", value, "\n", effect);
  };
  for (const json& item : existing) {
    const json* devices = core::JsonAt(item, {"spec", "devices"});
    if (devices == nullptr || !devices->is_array()) continue;
    for (const json& device : *devices) {
      const json* taints = core::JsonAt(device, {"taints"});
      if (taints == nullptr || !taints->is_array()) continue;
      for (const json& taint : *taints) {
        std::string time = core::JsonString(taint, "timeAdded");
        if (time.empty()) continue;
        added[id(core::JsonString(device, "name"), core::JsonString(taint, "key"),
                 core::JsonString(taint, "value"), core::JsonString(taint, "effect"))] = time;
      }
    }
  }
  for (ordered& device : slice["spec"]["devices"]) {
    if (!device.contains("taints")) continue;
    for (ordered& taint : device["taints"]) {
      std::string value = taint.contains("value") ? taint["value"].get<std::string>() : "";
      auto it = added.find(id(device["name"].get<std::string>(), taint["key"].get<std::string>(),
                              value, taint["effect"].get<std::string>()));
      if (it != added.end()) taint["timeAdded"] = it->second;
    }
  }
}

absl::StatusOr<json> ParseBody(const std::string& body, std::string_view what) {
  json parsed = json::parse(body, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InternalError(
        core::StrCat(what, ": the API server's answer is not a JSON object"));
  }
  return parsed;
}

absl::StatusOr<kube::HttpResponse> Expect2xx(kube::Client& client, kube::HttpRequest request) {
  ASSIGN_OR_RETURN(kube::HttpResponse response, client.Send(request));
  if (response.status < 200 || response.status > 299) {
    return kube::StatusFromResponse(request, response);
  }
  return response;
}

}  // namespace

std::vector<ordered> BuildResourceSlices(const PoolOwner& owner,
                                         const std::vector<gpu::DraDevice>& devices,
                                         int64_t generation) {
  size_t count =
      std::max<size_t>(1, (devices.size() + kMaxDevicesPerSlice - 1) / kMaxDevicesPerSlice);
  std::vector<ordered> slices;
  for (size_t i = 0; i < count; ++i) {
    ordered metadata = {
        {"generateName", core::StrCat(owner.node_name, "-", gpu::kDriverName, "-")}};
    if (!owner.node_uid.empty()) {
      metadata["ownerReferences"] = ordered::array({{{"apiVersion", "v1"},
                                                     {"kind", "Node"},
                                                     {"name", owner.node_name},
                                                     {"uid", owner.node_uid},
                                                     {"controller", true}}});
    }
    ordered entries = ordered::array();
    size_t end = std::min(devices.size(), (i + 1) * kMaxDevicesPerSlice);
    for (size_t d = i * kMaxDevicesPerSlice; d < end; ++d)
      entries.push_back(DeviceEntry(devices[d]));
    slices.push_back(
        {{"apiVersion", "resource.k8s.io/v1"},
         {"kind", "ResourceSlice"},
         {"metadata", metadata},
         {"spec",
          {{"driver", gpu::kDriverName},
           {"nodeName", owner.node_name},
           {"pool",
            {{"name", owner.node_name}, {"generation", generation}, {"resourceSliceCount", count}}},
           {"devices", entries}}}});
  }
  return slices;
}

std::string RenderSlicesYaml(const std::vector<ordered>& slices) {
  ordered list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", slices}};
  return cdi::RenderSpec(list, cdi::SpecFormat::kYaml);
}

absl::Status SlicePublisher::ReadNodeUid() {
  kube::HttpRequest request;
  request.path = core::StrCat("/api/v1/nodes/", node_name_);
  ASSIGN_OR_RETURN(kube::HttpResponse response, Expect2xx(client_, request));
  ASSIGN_OR_RETURN(json node, ParseBody(response.body, request.path));
  node_uid_ = core::JsonStringAt(node, {"metadata", "uid"});
  if (node_uid_.empty())
    return absl::InternalError(core::StrCat(request.path, ": no metadata.uid"));
  return absl::OkStatus();
}

absl::Status SlicePublisher::Publish(const std::vector<gpu::DraDevice>& devices) {
  if (node_uid_.empty()) RETURN_IF_ERROR(ReadNodeUid());
  kube::HttpRequest list;
  list.path = core::StrCat(kSlicesPath, "?fieldSelector=",
                           kube::UrlEncode(core::StrCat("spec.nodeName=", node_name_,
                                                        ",spec.driver=", gpu::kDriverName)));
  ASSIGN_OR_RETURN(kube::HttpResponse listed, Expect2xx(client_, list));
  ASSIGN_OR_RETURN(json existing_list, ParseBody(listed.body, list.path));
  std::vector<json> existing;
  int64_t generation = 0;
  const json* items = core::JsonAt(existing_list, {"items"});
  if (items != nullptr && items->is_array()) {
    for (const json& item : *items) {
      if (core::JsonStringAt(item, {"metadata", "name"}).empty()) continue;
      existing.push_back(item);
      const json* pool = core::JsonAt(item, {"spec", "pool"});
      if (pool != nullptr)
        generation = std::max<int64_t>(generation, core::JsonInteger(*pool, "generation", 0));
    }
  }
  std::sort(existing.begin(), existing.end(), [](const json& a, const json& b) {
    return core::JsonStringAt(a, {"metadata", "name"}) <
           core::JsonStringAt(b, {"metadata", "name"});
  });

  std::vector<ordered> wanted =
      BuildResourceSlices({node_name_, node_uid_}, devices, std::max<int64_t>(generation, 1));
  bool same = existing.size() == wanted.size();
  for (size_t i = 0; same && i < wanted.size(); ++i) {
    const json* devices = core::JsonAt(existing[i], {"spec", "devices"});
    const json* pool = core::JsonAt(existing[i], {"spec", "pool"});
    same =
        devices != nullptr && WithoutTaintTimes(*devices) == json(wanted[i]["spec"]["devices"]) &&
        pool != nullptr &&
        core::JsonInteger(*pool, "resourceSliceCount", 0) == static_cast<long long>(wanted.size());
  }
  if (same) {
    generation_ = generation;
    return absl::OkStatus();
  }

  wanted = BuildResourceSlices({node_name_, node_uid_}, devices, generation + 1);
  for (size_t i = 0; i < wanted.size(); ++i) {
    CarryTaintTimes(existing, wanted[i]);
    kube::HttpRequest write;
    write.content_type = "application/json";
    if (i < existing.size()) {
      // Replaced in place: the name stays, so a scheduler that read the old slice sees the new
      // generation on the same object.
      std::string name = core::JsonStringAt(existing[i], {"metadata", "name"});
      wanted[i]["metadata"].erase("generateName");
      wanted[i]["metadata"]["name"] = name;
      wanted[i]["metadata"]["resourceVersion"] =
          core::JsonStringAt(existing[i], {"metadata", "resourceVersion"});
      write.method = "PUT";
      write.path = core::StrCat(kSlicesPath, "/", name);
    } else {
      write.method = "POST";
      write.path = kSlicesPath;
    }
    write.body = wanted[i].dump();
    RETURN_IF_ERROR(Expect2xx(client_, write).status());
    ++writes_;
  }
  for (size_t i = wanted.size(); i < existing.size(); ++i) {
    kube::HttpRequest remove;
    remove.method = "DELETE";
    remove.path =
        core::StrCat(kSlicesPath, "/", core::JsonStringAt(existing[i], {"metadata", "name"}));
    ASSIGN_OR_RETURN(kube::HttpResponse response, client_.Send(remove));
    if (response.status != 404 && (response.status < 200 || response.status > 299)) {
      return kube::StatusFromResponse(remove, response);
    }
    ++writes_;
  }
  generation_ = generation + 1;
  spdlog::info("ResourceSlice of pool {}: {} device(s) published at generation {}", node_name_,
               devices.size(), generation_);
  return absl::OkStatus();
}

}  // namespace gpunode::dra
