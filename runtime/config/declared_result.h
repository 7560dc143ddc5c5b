// A result struct declared once: each field's name, the member it reads and one line of doc.
//
// The declaration sits next to the struct, as a function found by argument-dependent lookup:
//
//   inline auto declared_result(config::Tag<HiddenSizeEstimate>) {
//     return config::result_table(
//         config::result_field("hidden_size", &HiddenSizeEstimate::hidden_size, "d: r − 2 with a bias"),
//         config::result_field("found", &HiddenSizeEstimate::found, "the gap reaches min_gap"));
//   }
//
// Whoever presents the result — the Lua binding, a report, a test — walks the same fields, so the
// result table, its documentation and its field names cannot drift apart. A result_table is one
// table {hidden_size=, found=}; result_values are several values in field order (scipy-style
// `statistic, pvalue`).
#pragma once
#include <tuple>

namespace lmkit::config {

// Names a type in a declaration lookup: declared_result(Tag<T>{}), declared_options(Tag<T>{}).
template <typename T>
struct Tag {};

template <typename Struct, typename T>
struct ResultField {
  const char* name;
  T Struct::*member;
  const char* doc;
};

template <typename Struct, typename T>
constexpr ResultField<Struct, T> result_field(const char* name, T Struct::*member, const char* doc) {
  return {name, member, doc};
}

// TableOrFirst: a table that, read back from a script, may also be given as a lone value of its
// first field (a context as "the cat" or {text = "the cat", next = "sat"}).
enum class ResultShape { Table, Values, TableOrFirst };

template <typename... Fields>
struct DeclaredResult {
  ResultShape shape;
  std::tuple<Fields...> fields;
};

template <typename... Fields>
constexpr DeclaredResult<Fields...> result_table(Fields... fields) {
  return {ResultShape::Table, std::tuple<Fields...>(fields...)};
}

template <typename... Fields>
constexpr DeclaredResult<Fields...> result_table_or_first(Fields... fields) {
  return {ResultShape::TableOrFirst, std::tuple<Fields...>(fields...)};
}

template <typename... Fields>
constexpr DeclaredResult<Fields...> result_values(Fields... fields) {
  return {ResultShape::Values, std::tuple<Fields...>(fields...)};
}

}  // namespace lmkit::config
