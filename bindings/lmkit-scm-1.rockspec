-- LuaRocks: builds lmkit with CMake and installs the `lmkit` Lua module (and the lmkit executable,
-- with its recipes) into the rock tree. From a checkout of lmkit, with its Debian dependencies
-- installed (bash scripts/setup.sh --no-build):
--   luarocks --lua-version=5.4 make bindings/lmkit-scm-1.rockspec     (add --local for ~/.luarocks)
--   lua5.4 -e 'local lmkit = require "lmkit"; print(lmkit.version().lmkit)'
rockspec_format = "3.0"
package = "lmkit"
version = "scm-1"
source = {
  url = "git+file://.",  -- `luarocks make` builds the checkout it runs in; nothing is fetched
}
description = {
  summary = "Softmax-bottleneck research toolkit for word-level language models (C++/LibTorch, Lua 5.4)",
  detailed = [[
AWD-LSTM with the output heads of the softmax-bottleneck literature (Softmax, SigSoftmax, GSS,
LMS-PLIF, MoS, MoC, AdvSoft, heads written in Lua), NT-/ET-ASGD training, logP-matrix ranks and
spectra, statistics, and one recipe per experiment of the thesis it reproduces.
]],
  license = "BSD-3-Clause",
}
dependencies = {
  "lua == 5.4",
}
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    CMAKE_INSTALL_PREFIX = "$(PREFIX)",
    LMKIT_INSTALL_LUA_CMOD_DIR = "$(LIBDIR)",
    LMKIT_BUILD_TESTS = "OFF",
  },
}
