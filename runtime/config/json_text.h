// JSON text read from files and users is untrusted input (a run's summary.json, a checkpoint's
// header, a batch manifest, lmkit.json_decode): its nesting is bounded, so that neither our readers
// nor nlohmann's recursive dump/copy can exhaust the C stack, and Lua tables built from it stay
// within what the Lua walkers accept (lua_call.h applies the same bound).
#pragma once
#include <stdexcept>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lmkit::config {

// The deepest nesting of arrays/objects (and of Lua tables converted to or from them) accepted.
constexpr int kMaxNestingDepth = 200;

class JsonTextError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// JSON text of `value` for a file (indent < 0: one line). A string that is not UTF-8 (a run_dir
// of other bytes, say) has its bad bytes replaced by U+FFFD rather than failing the write.
std::string dump_json(const nlohmann::json& value, int indent = -1);

// Whether `text` is well-formed UTF-8 (JSON strings must be; Lua strings are any bytes).
bool is_valid_utf8(const std::string& text);

// Parses `text`; throws JsonTextError with nlohmann's description of a syntax error, or for
// nesting deeper than kMaxNestingDepth. Callers add the file or argument it came from.
nlohmann::json parse_json_text(const std::string& text);

// As lmkit.json_encode/json_decode give them: one line, or indented by 2 when pretty; a value read
// from text (UsageError "not valid JSON: ..." otherwise).
std::string json_text(const nlohmann::json& value, std::optional<bool> pretty);
nlohmann::json json_value(const std::string& text);

}  // namespace lmkit::config
