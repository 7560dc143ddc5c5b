// Fixture for structure.layers_detects_violations: an op that includes a model.
#include "ops/sideways.h"
#include "runtime/models/language_model.h"
// And a number printed with std::to_string, for structure.number_text_detects_to_string.
inline std::string sideways_rate(double rate) { return "rate " + std::to_string(rate); }
