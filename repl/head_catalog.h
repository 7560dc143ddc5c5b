// `lmkit heads`: the registered head kinds, from their own declarations (runtime/heads/
// head_registry.h), so a kind registered anywhere is listed with no list to update.
#pragma once
#include <string>

namespace lmkit::repl {

// Every kind: its constructor with the defaults, its capabilities and its summary. With `kind`,
// that kind's full doc (its options one per line); an unknown kind is a ConfigError naming the
// closest one.
std::string head_catalog(const std::string& kind = "");

// Prints head_catalog(kind); returns the exit status.
int list_heads(const std::string& kind);

}  // namespace lmkit::repl
