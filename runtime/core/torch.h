// The one place lmkit includes Torch. Every Torch-using file includes this header first, so the
// precompiled header (runtime/CMakeLists.txt) serves the whole build.
#pragma once
#include <torch/torch.h>
