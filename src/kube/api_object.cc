#include "kube/api_object.h"

#include "core/text.h"

namespace gpunode::kube {

using core::StrCat;

absl::Status ReadJsonObject(std::string_view json, std::string_view source, std::string_view kind,
                            std::string_view fix,
                            absl::FunctionRef<absl::Status(od::object&, const JsonWalk&)> read) {
  // Answers are small; a padded copy is simpler than padding every caller's buffer.
  simdjson::padded_string padded(json);
  JsonInput input(source, padded.data(), nullptr, fix);
  Where where = Where::Object(kind);
  JsonWalk walk(input, where);
  od::parser parser;
  od::document doc;
  if (simdjson::error_code e = parser.iterate(padded).get(doc)) {
    return absl::InvalidArgumentError(
        StrCat(source, ": cannot parse JSON (", simdjson::error_message(e), "); ", fix));
  }
  input.set_document(&doc);
  od::object top;
  if (simdjson::error_code e = doc.get_object().get(top)) {
    if (e == simdjson::INCORRECT_TYPE) {
      return absl::InvalidArgumentError(
          StrCat(source, ": not a JSON object (expected a ", kind, "); ", fix));
    }
    return walk.FailJson("", "an object", e);
  }
  RETURN_IF_ERROR(read(top, walk));
  if (const char* trailing = nullptr; doc.current_location().get(trailing) == simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        StrCat(source, ": unexpected content after the JSON object", input.Location(), "; ", fix));
  }
  return absl::OkStatus();
}

absl::Status ReadApiObject(std::string_view json, std::string_view source, std::string_view kind,
                           absl::FunctionRef<absl::Status(od::object&, const JsonWalk&)> read) {
  return ReadJsonObject(json, source, kind, kFixApiAnswer, read);
}

absl::Status ReadApiList(std::string_view json, std::string_view source, std::string_view item_kind,
                         std::string& continue_token,
                         absl::FunctionRef<absl::Status(od::object&, const JsonWalk&)> read_item) {
  continue_token.clear();
  return ReadApiObject(json, source, "List", [&](od::object& top, const JsonWalk& walk) {
    return walk.ForEachField(top, "", [&](const FieldKey& key, od::value& val) {
      if (key == "metadata") {
        return walk.ForEachField(val, "metadata", [&](const FieldKey& key, od::value& val) {
          if (key != "continue") return absl::OkStatus();
          return walk.ReadStringCopy(val, "metadata.continue", continue_token);
        });
      }
      if (key != "items") return absl::OkStatus();
      size_t index = 0;
      return walk.ForEachElement(val, "items", [&](od::value& element) {
        Where where = Where::Item(index++);
        where.kind = item_kind;
        JsonWalk item_walk(walk.input(), where);
        od::object item;
        if (simdjson::error_code e = element.get_object().get(item)) {
          return walk.FailJson(StrCat("items[", where.index, "]"), "an object", e);
        }
        return read_item(item, item_walk);
      });
    });
  });
}

}  // namespace gpunode::kube
