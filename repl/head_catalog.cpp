#include "repl/head_catalog.h"

#include <cstdio>

#include "runtime/core/number_text.h"
#include "runtime/heads/head_registry.h"

namespace lmkit::repl {
namespace {

std::string capabilities_text(const HeadCapabilities& c) {
  std::string text;
  for (const auto& capability : head_capability_declarations()) {
    if (c.*capability.member) text += (text.empty() ? "" : ", ") + std::string(capability.name);
  }
  return text.empty() ? "-" : text;
}

}  // namespace

std::string head_catalog(const std::string& kind) {
  if (!kind.empty()) return require_head_kind(kind).doc() + "\n";
  const auto kinds = registered_head_kinds();
  std::string text = "Head kinds (" + integer_text(static_cast<std::int64_t>(kinds.size())) +
                     "): lmkit.heads.KIND{options} makes one; `lmkit heads KIND` or help(lmkit.heads.KIND) "
                     "explains its options.\n";
  for (const auto& capability : head_capability_declarations()) text += std::string(capability.name) + ": " + capability.doc + "\n";
  text += "\n";
  for (const auto* k : kinds) {
    text += "  " + k->kind + k->schema().signature() + "  [" + capabilities_text(k->capabilities) + "]\n";
    text += "      " + k->summary + "\n";
  }
  return text;
}

int list_heads(const std::string& kind) {
  std::fputs(head_catalog(kind).c_str(), stdout);
  return 0;
}

}  // namespace lmkit::repl
