# The precompiled Torch header, given only to the sources that include Torch.
#
# Forcing <torch/torch.h> (and its debug information) into a file that never includes it makes
# that file 2–3× slower to compile: runtime/core/file_lock.cpp takes 8 s without the header and
# 21 s with it. So each target's sources are sorted at configure time: a source whose own
# `#include "..."` lines reach runtime/core/torch.h — the one place lmkit includes Torch — gets
# the header; every other source is compiled without it. A source sorted wrongly still builds
# (the header only saves time), so the sort needs only to follow lmkit's own quoted includes.

set(_lmkit_torch_header "${PROJECT_SOURCE_DIR}/runtime/core/torch.h")

# _lmkit_reaches_torch(<file> <result-var>): TRUE if <file> includes runtime/core/torch.h,
# directly or through lmkit's own headers. Answers are kept per file for the whole configure.
function(_lmkit_reaches_torch file result)
  get_property(known GLOBAL PROPERTY "LMKIT_REACHES_TORCH:${file}" SET)
  if(known)
    get_property(answer GLOBAL PROPERTY "LMKIT_REACHES_TORCH:${file}")
    set(${result} ${answer} PARENT_SCOPE)
    return()
  endif()
  # Mark first: an include cycle ends here instead of recursing for ever.
  set_property(GLOBAL PROPERTY "LMKIT_REACHES_TORCH:${file}" FALSE)
  set(answer FALSE)
  if(file STREQUAL "${_lmkit_torch_header}")
    set(answer TRUE)
  elseif(EXISTS "${file}")
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]+\"")
    get_filename_component(folder "${file}" DIRECTORY)
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" included "${line}")
      set(found "")
      foreach(base IN ITEMS "${PROJECT_SOURCE_DIR}" "${folder}" "${PROJECT_BINARY_DIR}")
        if(EXISTS "${base}/${included}")
          get_filename_component(found "${base}/${included}" ABSOLUTE)
          break()
        endif()
      endforeach()
      if(found)
        _lmkit_reaches_torch("${found}" reaches)
        if(reaches)
          set(answer TRUE)
          break()
        endif()
      endif()
    endforeach()
  endif()
  set_property(GLOBAL PROPERTY "LMKIT_REACHES_TORCH:${file}" ${answer})
  set(${result} ${answer} PARENT_SCOPE)
endfunction()

# _lmkit_skip_pch_where_no_torch(<target>): sources of <target> that never include Torch are
# compiled without the precompiled header.
function(_lmkit_skip_pch_where_no_torch target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  foreach(source IN LISTS sources)
    if(NOT source MATCHES "\\.(cpp|cc|cxx)$")
      continue()
    endif()
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
    _lmkit_reaches_torch("${path}" reaches)
    if(NOT reaches)
      set_source_files_properties("${path}" TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()

# lmkit_torch_pch(<target>): <target> builds the precompiled Torch header for every other target.
function(lmkit_torch_pch target)
  if(LMKIT_USE_PCH)
    target_precompile_headers(${target} PRIVATE "${_lmkit_torch_header}")
    _lmkit_skip_pch_where_no_torch(${target})
  endif()
endfunction()

# lmkit_use_torch_pch(<target>): share lmkit_core's precompiled Torch header (same flags required).
function(lmkit_use_torch_pch target)
  if(LMKIT_USE_PCH)
    target_precompile_headers(${target} REUSE_FROM lmkit_core)
    _lmkit_skip_pch_where_no_torch(${target})
  endif()
endfunction()
