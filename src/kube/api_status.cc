#include "kube/api_status.h"

#include "kube/api_object.h"

namespace gpunode::kube {

namespace {

absl::Status ReadStatusDetails(od::value& details, const JsonWalk& walk, ApiStatus& out) {
  return walk.ForEachField(details, "details", [&](const FieldKey& key, od::value& val) {
    if (key == "retryAfterSeconds") {
      return walk.ReadInt(val, "details.retryAfterSeconds", out.retry_after_seconds);
    }
    if (key != "causes") return absl::OkStatus();
    return walk.ForEachElement(val, "details.causes", [&](od::value& cause) {
      return walk.ForEachField(cause, "details.causes[]", [&](const FieldKey& key, od::value& val) {
        if (key != "message") return absl::OkStatus();
        std::string_view message;
        RETURN_IF_ERROR(walk.ReadString(val, "details.causes[].message", message));
        if (!message.empty()) out.cause_messages.emplace_back(message);
        return absl::OkStatus();
      });
    });
  });
}

}  // namespace

absl::StatusOr<ApiStatus> ReadApiStatus(std::string_view json, std::string_view source) {
  ApiStatus out;
  RETURN_IF_ERROR(ReadApiObject(json, source, "Status", [&](od::object& obj, const JsonWalk& walk) {
    return walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
      std::string_view text;
      if (key == "message") {
        RETURN_IF_ERROR(walk.ReadString(val, "message", text));
        out.message = text;
      } else if (key == "reason") {
        RETURN_IF_ERROR(walk.ReadString(val, "reason", text));
        out.reason = text;
      } else if (key == "details") {
        return ReadStatusDetails(val, walk, out);
      }
      return absl::OkStatus();
    });
  }));
  return out;
}

}  // namespace gpunode::kube
