# Every #include of ours points down the layers (runtime/CMakeLists.txt lists them; docs/development.md
# draws them): repl → bindings → {batch, training, analysis}; batch → runs; training → runs →
# {nn (models → heads), data}; analysis → {nn, data, stats}; all → ops → core, with no include
# sideways between siblings (training ↔ analysis, batch ↔ training, data ↔ nn, ...).
#   cmake -DSOURCE_DIR=<checkout> -P tests/structure/check_layers.cmake
# Prints each offending include as "FILE includes HEADER: LAYER may not include LAYER" and fails.
cmake_minimum_required(VERSION 3.24)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "pass -DSOURCE_DIR=<the checkout>")
endif()

# The layer of a path inside the checkout, or "" for files outside the layered folders.
function(layer_of path out)
  set(layer "")
  if(path MATCHES "^runtime/(core|config|tensor|tensor_files)/")
    set(layer core)
  elseif(path MATCHES "^runtime/stats/")
    set(layer stats)
  elseif(path MATCHES "^ops/")
    set(layer ops)
  elseif(path MATCHES "^runtime/data/")
    set(layer data)
  elseif(path MATCHES "^runtime/heads/")
    set(layer heads)
  elseif(path MATCHES "^runtime/models/")
    set(layer models)
  elseif(path MATCHES "^runtime/runs/")
    set(layer runs)
  elseif(path MATCHES "^runtime/training/")
    set(layer training)
  elseif(path MATCHES "^runtime/batch/")
    set(layer batch)
  elseif(path MATCHES "^runtime/analysis/")
    set(layer analysis)
  elseif(path MATCHES "^bindings/")
    set(layer bindings)
  elseif(path MATCHES "^repl/")
    set(layer repl)
  elseif(path MATCHES "^runtime/")
    set(layer "unassigned")
  endif()
  set(${out} "${layer}" PARENT_SCOPE)
endfunction()

# What each layer may include (itself included).
set(allowed_core core)
set(allowed_stats core stats)
set(allowed_ops core ops)
set(allowed_data core data)
# nn is two layers in one library: the models (encoder, LanguageModel, checkpoints) sit on the heads.
set(allowed_heads core ops heads)
set(allowed_models core ops heads models)
# A run's records on disk (store, status, comparison, a recipe folder's record and cells).
set(allowed_runs core ops data heads models runs)
set(allowed_training core ops data heads models runs training)
# Batches of a recipe's cells: plans (the data a task reads), backends, task states, the process
# pool; never the trainer.
set(allowed_batch core data runs batch)
set(allowed_analysis core ops data stats heads models analysis)
set(allowed_bindings core ops data stats heads models runs training batch analysis bindings)
set(allowed_repl core ops data stats heads models runs training batch analysis bindings repl)

file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}"
     "${SOURCE_DIR}/runtime/*.h" "${SOURCE_DIR}/runtime/*.cpp"
     "${SOURCE_DIR}/ops/*.h" "${SOURCE_DIR}/ops/*.cpp" "${SOURCE_DIR}/ops/*.cu" "${SOURCE_DIR}/ops/*.cuh"
     "${SOURCE_DIR}/bindings/*.h" "${SOURCE_DIR}/bindings/*.cpp"
     "${SOURCE_DIR}/repl/*.h" "${SOURCE_DIR}/repl/*.cpp")
set(violations 0)
set(checked 0)
foreach(source IN LISTS sources)
  layer_of("${source}" from)
  if(from STREQUAL "unassigned")
    message("${source}: in no layer (add its folder to tests/structure/check_layers.cmake and runtime/CMakeLists.txt)")
    math(EXPR violations "${violations} + 1")
    continue()
  endif()
  file(STRINGS "${SOURCE_DIR}/${source}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]+\"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" header "${line}")
    layer_of("${header}" to)
    if(to STREQUAL "")
      continue()  # generated headers, the build's own
    endif()
    math(EXPR checked "${checked} + 1")
    if(NOT to IN_LIST allowed_${from})
      message("${source} includes ${header}: ${from} may not include ${to}")
      math(EXPR violations "${violations} + 1")
    endif()
  endforeach()
endforeach()
list(LENGTH sources files)
if(violations GREATER 0)
  message(FATAL_ERROR "${violations} include(s) against the layers (of ${checked} in ${files} files)")
endif()
message("layers: ${checked} includes in ${files} files, all pointing down")
