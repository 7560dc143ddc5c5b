// Fixture for structure.layers_detects_violations: an op that includes a model.
#include "ops/sideways.h"
#include "runtime/models/language_model.h"
