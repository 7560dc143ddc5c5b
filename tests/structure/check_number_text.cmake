# Numbers become text through runtime/core/number_text.h only (integer_text, describe_number):
# std::to_string prints a double with six fixed decimals, so lmkit's sources do not call it.
#   cmake -DSOURCE_DIR=<checkout> -P tests/structure/check_number_text.cmake
cmake_minimum_required(VERSION 3.24)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "pass -DSOURCE_DIR=<the checkout>")
endif()
file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}"
     "${SOURCE_DIR}/runtime/*.h" "${SOURCE_DIR}/runtime/*.cpp"
     "${SOURCE_DIR}/ops/*.h" "${SOURCE_DIR}/ops/*.cpp" "${SOURCE_DIR}/ops/*.cu"
     "${SOURCE_DIR}/bindings/*.h" "${SOURCE_DIR}/bindings/*.cpp"
     "${SOURCE_DIR}/repl/*.h" "${SOURCE_DIR}/repl/*.cpp")
list(REMOVE_ITEM sources runtime/core/number_text.h)
set(found 0)
foreach(source IN LISTS sources)
  file(STRINGS "${SOURCE_DIR}/${source}" lines REGEX "std::to_string\\(")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    message("${source}: ${line}")
    math(EXPR found "${found} + 1")
  endforeach()
endforeach()
list(LENGTH sources files)
if(found GREATER 0)
  message(FATAL_ERROR "${found} use(s) of std::to_string: use integer_text or describe_number (runtime/core/number_text.h)")
endif()
message("number text: ${files} files, no std::to_string")
