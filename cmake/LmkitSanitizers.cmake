# LMKIT_SANITIZE=ON instruments every target of ours with ASan + UBSan. Torch and Lua stay
# uninstrumented (Debian's builds); leaks inside them are suppressed in tests/sanitizers/lsan.supp.
if(LMKIT_SANITIZE)
  set(_lmkit_san -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  # Torch's headers rely on vptr casts across shared-library boundaries the checker cannot see, and
  # at::indexing::TensorIndex (ATen/TensorIndexing.h) copies its uninitialized `boolean_` member
  # whenever a non-boolean index is copied or moved, which the `bool` check reports as UB.
  list(APPEND _lmkit_san -fno-sanitize=vptr,bool)
  # C and C++ only: nvcc (the CUDA kernels) takes host-compiler flags differently.
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_lmkit_san}>")
  # -O1 keeps ASan's reports exact and the build cheap (the sanitizer pass runs in CI after the
  # normal one); -g1 keeps line numbers in stack traces without full debug info.
  string(REPLACE "-O2" "-O1" CMAKE_CXX_FLAGS_RELWITHDEBINFO "${CMAKE_CXX_FLAGS_RELWITHDEBINFO}")
  string(REPLACE "-g" "-g1" CMAKE_CXX_FLAGS_RELWITHDEBINFO "${CMAKE_CXX_FLAGS_RELWITHDEBINFO}")
  add_link_options(${_lmkit_san})
  # GCC's -Wmaybe-uninitialized misfires under the sanitizers' instrumentation (std::regex's
  # automaton, std::function inside it: GCC 12 at -O1 with ASan); the normal build keeps it.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>")
  endif()
endif()
