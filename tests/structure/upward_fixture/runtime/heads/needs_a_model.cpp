// Planted violation: a head may not include the models that sit on it (the nn layer's inner order).
#include "runtime/models/language_model.h"
