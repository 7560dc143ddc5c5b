#include "repl/head_catalog.h"

#include <cstdio>

#include "runtime/core/number_text.h"
#include "runtime/heads/head_registry.h"

namespace lmkit::repl {
namespace {

std::string capabilities_text(const HeadCapabilities& c) {
  std::string text;
  const auto add = [&text](bool has, const char* name) {
    if (has) text += (text.empty() ? "" : ", ") + std::string(name);
  };
  add(c.projects, "projects");
  add(c.pointwise, "pointwise");
  add(c.monotone, "monotone");
  add(c.mixture, "mixture");
  return text.empty() ? "-" : text;
}

}  // namespace

std::string head_catalog(const std::string& kind) {
  if (!kind.empty()) return require_head_kind(kind).doc() + "\n";
  const auto kinds = registered_head_kinds();
  std::string text = "Head kinds (" + integer_text(static_cast<std::int64_t>(kinds.size())) +
                     "): lmkit.heads.KIND{options} makes one; `lmkit heads KIND` or help(lmkit.heads.KIND) "
                     "explains its options.\n"
                     "projects: maps h to latent contexts of the decoder's width (trains with the MoS "
                     "configuration); pointwise: log_softmax(f(l)); monotone: f increasing (ranks words as "
                     "Softmax does); mixture: K components under priors, as MoS (the MoS configuration's K).\n\n";
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
