// Reads one JSON object an API server answered with (a GET's body, a list page, an error's
// Status, an AdmissionReview) through json_walk, for the readers of such answers (api_status,
// job_status, daemonset_view, pod_status, object_meta, ...). Those readers copy what they keep:
// the text is parsed in a buffer that lives only for the call.
#pragma once

#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "kube/json_walk.h"

namespace gpunode::kube {

// The fix every error about what an API server sent ends with.
inline constexpr std::string_view kFixApiAnswer =
    "this is not what the Kubernetes API defines; did it come from a Kubernetes API server (not "
    "a proxy or another service in its place)?";

// Parses `json` and calls read(the top-level object, its walk); `source` names the input in
// errors, `kind` the object (Where::Object), and `fix` ends every error about it. Other JSON
// documents than the API's (a Prometheus answer, gpunode's own reports) are read with this too.
absl::Status ReadJsonObject(std::string_view json, std::string_view source, std::string_view kind,
                            std::string_view fix,
                            absl::FunctionRef<absl::Status(od::object&, const JsonWalk&)> read);

// ReadJsonObject for what an API server sent: `source` names the answer in
// errors ("GET /apis/batch/v1/..."), `kind` the object (Where::Object). Errors are one line, as
// json_walk.h says, ending in kFixApiAnswer; text that is not one JSON object is one too.
absl::Status ReadApiObject(std::string_view json, std::string_view source, std::string_view kind,
                           absl::FunctionRef<absl::Status(od::object&, const JsonWalk&)> read);

// Parses one page of a list (PodList, EventList, ...) and calls read_item(the item, its walk)
// for each element of items, whose walk names it "items[3] (<item_kind>)" until the reader sets
// its name; `continue_token` receives metadata.continue (empty on the last page).
absl::Status ReadApiList(std::string_view json, std::string_view source, std::string_view item_kind,
                         std::string& continue_token,
                         absl::FunctionRef<absl::Status(od::object&, const JsonWalk&)> read_item);

}  // namespace gpunode::kube
