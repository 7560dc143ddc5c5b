// A dtype held as torch::ScalarType in an options struct and written as its name in configs and
// Lua tables ("float32"): one declaration line, as any other option.
#pragma once
#include <string>

#include "runtime/config/bound_options.h"
#include "runtime/core/torch.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit {

// `name` (one of the floating dtypes) bound to `field`; its default is the struct's own.
template <typename Options>
config::BoundOption<Options> float_dtype_option(const char* name, torch::ScalarType Options::*field, const char* doc) {
  return {config::OptionSpec(name, config::OptionType::String, dtype_name(Options().*field), config::Range::any(), doc)
              .one_of({"float16", "bfloat16", "float32", "float64"}),
          [field](const Options& o) -> nlohmann::json { return dtype_name(o.*field); },
          [field](Options& o, const nlohmann::json& value) { o.*field = parse_dtype(value.get<std::string>()); }};
}

}  // namespace lmkit
