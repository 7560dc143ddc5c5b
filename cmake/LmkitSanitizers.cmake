# LMKIT_SANITIZE=ON instruments every target of ours with ASan + UBSan. Torch and Lua stay
# uninstrumented (Debian's builds); leaks inside them are suppressed in tests/sanitizers/lsan.supp.
if(LMKIT_SANITIZE)
  set(_lmkit_san -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  # Torch's headers rely on vptr casts across shared-library boundaries the checker cannot see.
  list(APPEND _lmkit_san -fno-sanitize=vptr)
  add_compile_options(${_lmkit_san})
  add_link_options(${_lmkit_san})
endif()
