// A command's options derived from an OptionSchema (runtime/config/option_schema.h), so that the
// command line and the Lua table of the same call read one declaration: its names, docs, defaults
// and checks.
//
//   a required string option                    → a positional argument (recipe)
//   a boolean                                   → a flag, --dry-run
//   a list of strings                           → a repeatable option named in the singular,
//                                                 sets → --set KEY=VALUE, sbatch_args → --sbatch-arg
//   any other                                   → --name-with-dashes VALUE, checked by the schema as it
//                                                 is parsed ("--jobs: lmkit batch option 'jobs' must be ≥ 1, got 0")
#pragma once
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "runtime/config/option_schema.h"

namespace lmkit::repl {

class DeclaredCliOptions {
 public:
  // Adds the options to `command`; `schema` outlives this object (a declaration's static schema).
  DeclaredCliOptions(CLI::App* command, const config::OptionSchema& schema);
  DeclaredCliOptions(const DeclaredCliOptions&) = delete;
  DeclaredCliOptions& operator=(const DeclaredCliOptions&) = delete;

  // The options the command line gave, each as a value of its declared type (those not given are
  // left out: their defaults are the declaration's).
  nlohmann::json given() const;

  // The flag of a declared option: "--jobs", "--set", "recipe" for a positional one.
  static std::string flag_of(const config::OptionSpec& spec);

 private:
  const config::OptionSchema& schema_;
  std::map<std::string, std::string> texts_;
  std::map<std::string, std::vector<std::string>> lists_;
  std::map<std::string, bool> flags_;
  std::map<std::string, CLI::Option*> options_;
};

// The value of one option's command-line text, by its declared type: "12" an integer, "0.5" a
// number, anything for a string. ConfigError in the schema's words when the text is not of the type.
nlohmann::json option_value(const config::OptionSchema& schema, const config::OptionSpec& spec, const std::string& text);

}  // namespace lmkit::repl
