// Fixture for structure.layers_detects_violations: a core header that includes the trainer.
#pragma once
#include "runtime/training/trainer.h"
