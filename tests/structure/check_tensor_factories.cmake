# Every Torch tensor factory in runtime/ and ops/ takes its options from an input or a named device,
# or says why the host is right: a tensor made on the CPU inside code that follows its input's device
# is the bug that only a GPU reveals, and the code no second device type runs in the tests is covered
# here instead (issue 24, part 1).
#   cmake -DSOURCE_DIR=<checkout> [-DLIST=ON] -P tests/structure/check_tensor_factories.cmake
# (LIST=ON prints every call with its verdict: options, marked host, or flagged.)
#
# The factories: torch:: or at:: empty, zeros, ones, full, rand, randn, randint, randperm, arange,
# linspace, logspace, eye, tensor, from_blob, empty_strided, scalar_tensor, and normal and bernoulli
# in their factory form (a {sizes} list among the arguments); not the _like forms, not the in-place
# methods (x.uniform_, x.bernoulli_), which follow x. A call is accepted when its argument list (to
# the matching parenthesis, over as many lines as it takes; comments and string literals left out)
#   - takes a tensor's options: `x.options()` (with .dtype(...) or anything else after it), or
#   - names a device: `.device(`, or an identifier ending in `device` (a torch::Device), or
#   - holds an identifier this file declares as such options: `auto NAME = x.options()...` or
#     `auto NAME = torch::TensorOptions()...device(...)...` (as `index` in runtime/heads/mixtape_head.cpp),
# and says nothing of kCPU; or when the call is marked `// host: <reason>`: on its own line, or on a
# comment line just before its statement. A marker covers its statement to the end (the line that
# ends in ; { or }), so one marker serves a statement of several lines; a TensorOptions declaration
# under a marker makes its identifier accepted in the file. Anything else is printed as
# "FILE:LINE: CALL" and the check fails.
cmake_minimum_required(VERSION 3.24)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "pass -DSOURCE_DIR=<the checkout>")
endif()

# Whole files that work on the host by design, each with its reason. Keep this short: a marker on the
# line says more, and a file listed here is not checked at all.
set(host_files runtime/data/synthetic_language.cpp)
set(host_reason_runtime/data/synthetic_language.cpp
    "the synthetic languages' reference model: every tensor is filled or read through data_ptr in float64 on the host, and its token inputs must be CPU tensors (check_tokens)")

file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}"
     "${SOURCE_DIR}/runtime/*.h" "${SOURCE_DIR}/runtime/*.cpp"
     "${SOURCE_DIR}/ops/*.h" "${SOURCE_DIR}/ops/*.cpp" "${SOURCE_DIR}/ops/*.cu" "${SOURCE_DIR}/ops/*.cuh")
list(SORT sources)

# Characters CMake's lists would trip on stand in for themselves while a file is split into lines.
string(ASCII 1 SEMI)
string(ASCII 2 BSL)
string(ASCII 3 LBR)
string(ASCII 4 RBR)
set(factory_names "empty|zeros|ones|full|rand|randn|randint|randperm|arange|linspace|logspace|eye|tensor|from_blob|empty_strided|scalar_tensor|normal|bernoulli")
set(factory_regex "(^|[^A-Za-z0-9_:])((torch|at)::(${factory_names}))[ \t]*\\(")
set(marker_regex "//[ \t]*host:[ \t]*[^ \t]")

function(readable text out)
  string(REPLACE "${SEMI}" ";" text "${text}")
  string(REPLACE "${BSL}" "\\" text "${text}")
  string(REPLACE "${LBR}" "[" text "${text}")
  string(REPLACE "${RBR}" "]" text "${text}")
  string(REGEX REPLACE "[ \t]+" " " text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

set(found 0)
set(calls 0)
set(marked 0)
set(checked_files 0)
foreach(source IN LISTS sources)
  if(source IN_LIST host_files)
    continue()
  endif()
  math(EXPR checked_files "${checked_files} + 1")
  file(READ "${SOURCE_DIR}/${source}" content)
  string(REPLACE "\\" "${BSL}" content "${content}")
  string(REPLACE ";" "${SEMI}" content "${content}")
  string(REPLACE "[" "${LBR}" content "${content}")
  string(REPLACE "]" "${RBR}" content "${content}")
  string(REPLACE "\r" "" content "${content}")
  string(REPLACE "\n" ";" lines "${content}")

  # Pass 1: each line's code (string and character literals emptied, comments dropped), whether a
  # host marker covers it, and the identifiers declared as options that follow an input or a device.
  set(code_lines "")
  set(covered_lines "")
  set(option_names "")
  set(in_block_comment FALSE)
  set(covering FALSE)
  foreach(line IN LISTS lines)
    set(code "${line}")
    if(in_block_comment)
      string(FIND "${code}" "*/" end)
      if(end EQUAL -1)
        set(code "")
      else()
        math(EXPR end "${end} + 2")
        string(SUBSTRING "${code}" ${end} -1 code)
        set(in_block_comment FALSE)
      endif()
    endif()
    string(REGEX REPLACE "\"([^\"${BSL}]|${BSL}.)*\"" "\"\"" code "${code}")
    string(REGEX REPLACE "'([^'${BSL}]|${BSL}.)*'" "''" code "${code}")
    string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" " " code "${code}")
    string(REGEX REPLACE "//.*$" "" code "${code}")
    string(FIND "${code}" "/*" begin)
    if(NOT begin EQUAL -1)
      string(SUBSTRING "${code}" 0 ${begin} code)
      set(in_block_comment TRUE)
    endif()
    if(line MATCHES "${marker_regex}")
      set(covering TRUE)
    endif()
    if(covering AND code MATCHES "(TensorOptions|options\\(\\))")
      # A declaration under a marker: its options are the host's on purpose.
      if(code MATCHES "(auto|TensorOptions)&?[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*=")
        list(APPEND option_names "${CMAKE_MATCH_2}")
      endif()
    elseif(code MATCHES "(auto|TensorOptions)&?[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*([^=].*)$")
      set(name "${CMAKE_MATCH_2}")
      set(value "${CMAKE_MATCH_3}")
      if(NOT value MATCHES "kCPU" AND
         (value MATCHES "^[A-Za-z_][A-Za-z0-9_.>()-]*options\\(\\)" OR
          value MATCHES "^((torch|at|c10)::)?TensorOptions\\(\\).*\\.device\\("))
        list(APPEND option_names "${name}")
      endif()
    endif()
    list(APPEND code_lines ".${code}")  # the dot keeps an empty first line an element
    list(APPEND covered_lines "${covering}")
    if(code MATCHES "[${SEMI}{}][ \t]*$")
      set(covering FALSE)
    endif()
  endforeach()
  list(REMOVE_DUPLICATES option_names)

  # Pass 2: each factory call, its argument list to the matching parenthesis, and the verdict.
  list(LENGTH code_lines count)
  set(index 0)
  foreach(entry IN LISTS code_lines)
    string(SUBSTRING "${entry}" 1 -1 rest)
    math(EXPR line_number "${index} + 1")
    list(GET covered_lines ${index} covered)
    while(rest MATCHES "${factory_regex}")
      set(match "${CMAKE_MATCH_0}")
      set(lead "${CMAKE_MATCH_1}")
      set(name "${CMAKE_MATCH_2}")
      set(factory "${CMAKE_MATCH_4}")
      string(FIND "${rest}" "${match}" at)
      string(LENGTH "${match}" length)
      math(EXPR after "${at} + ${length}")
      string(SUBSTRING "${rest}" ${after} -1 rest)
      # The arguments, over the following lines while the parentheses are open.
      set(text "${rest}")
      set(args "")
      set(depth 1)
      set(next ${index})
      while(depth GREATER 0)
        if(text MATCHES "^([^()]+)")
          set(chunk "${CMAKE_MATCH_1}")
          string(LENGTH "${chunk}" chunk_length)
          string(APPEND args "${chunk}")
          string(SUBSTRING "${text}" ${chunk_length} -1 text)
        endif()
        if("${text}" STREQUAL "")
          math(EXPR next "${next} + 1")
          if(next GREATER_EQUAL count)
            break()  # unbalanced: judged on what there is
          endif()
          list(GET code_lines ${next} text)
          string(SUBSTRING "${text}" 1 -1 text)
          string(APPEND args " ")
          continue()
        endif()
        string(SUBSTRING "${text}" 0 1 paren)
        string(SUBSTRING "${text}" 1 -1 text)
        if(paren STREQUAL "(")
          math(EXPR depth "${depth} + 1")
        else()
          math(EXPR depth "${depth} - 1")
        endif()
        if(depth GREATER 0)
          string(APPEND args "${paren}")
        endif()
      endwhile()
      if(factory MATCHES "^(normal|bernoulli)$" AND NOT args MATCHES "{")
        continue()  # the form that follows a tensor argument
      endif()
      math(EXPR calls "${calls} + 1")
      set(accepted FALSE)
      if(NOT args MATCHES "kCPU")
        if(args MATCHES "options\\(\\)" OR args MATCHES "\\.device\\(" OR
           args MATCHES "(^|[^A-Za-z0-9_])[A-Za-z0-9_]*device_?([^A-Za-z0-9_(]|$)")
          set(accepted TRUE)
        else()
          foreach(option_name IN LISTS option_names)
            if(args MATCHES "(^|[^A-Za-z0-9_.>])${option_name}([^A-Za-z0-9_]|$)")
              set(accepted TRUE)
              break()
            endif()
          endforeach()
        endif()
      endif()
      string(STRIP "${args}" args)
      readable("${name}(${args})" call)
      if(accepted)
        if(LIST)
          message("  options  ${source}:${line_number}: ${call}")
        endif()
        continue()
      endif()
      if(covered)
        if(LIST)
          message("  host     ${source}:${line_number}: ${call}")
        endif()
        math(EXPR marked "${marked} + 1")
        continue()
      endif()
      message("${source}:${line_number}: ${call}")
      math(EXPR found "${found} + 1")
    endwhile()
    math(EXPR index "${index} + 1")
  endforeach()
endforeach()

list(LENGTH host_files exempt)
if(found GREATER 0)
  message(FATAL_ERROR "${found} tensor factory call(s) that make a tensor on the host in code that may run on "
          "another device (of ${calls} in ${checked_files} files): take the options from an input "
          "(torch::zeros(sizes, x.options()), x.options().dtype(torch::kInt64)) or name the device "
          "(torch::TensorOptions().dtype(...).device(x.device())); where the host is right by design (data "
          "loading, an analysis that copied to CPU float64 first, a parameter initialised before the module is "
          "moved with .to(device)), mark the line `// host: <why>`")
endif()
message("tensor factories: ${calls} calls in ${checked_files} files, each following an input or a device or "
        "marked host (${marked}); ${exempt} file(s) host-only by design:")
foreach(file IN LISTS host_files)
  message("  ${file}: ${host_reason_${file}}")
endforeach()
