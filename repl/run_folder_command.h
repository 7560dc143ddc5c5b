// `lmkit status DIR` and `lmkit report DIR` for every folder lmkit writes results into: a recipe's
// output folder (its recipe.json: with a batch section, the per-task table of batch_command.h; else
// the per-cell table; the report rendered by the recipe with its recorded settings) and a training
// run's directory (config.json: its state, epochs, best valid ppl and ETA;
// the report its epochs and learning curve).
#pragma once
#include <string>

namespace lmkit::repl {

// 0 when everything in it is done, 1 when something failed, 3 while something is still to finish;
// 2 (with the message) for a folder that is none of the three.
int show_folder_status(const std::string& dir);

// The folder's report; the exit status of the recipe's report or 0.
int report_folder(const std::string& dir);

}  // namespace lmkit::repl
