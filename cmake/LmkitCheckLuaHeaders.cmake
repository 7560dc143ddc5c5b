# lmkit_check_lua_headers(): fails the configure step, in lmkit's words, when `#include <lua.hpp>`
# does not compile with the include folders lmkit's Lua targets will use (LUA_INCLUDE_DIR, then
# CMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES and CMAKE_CXX_FLAGS, which every C++ file gets).
#
# FindLua only reads lua.h's version. Debian's luaconf.h also includes lua5.4-deb-multiarch.h, which
# lives in the multiarch folder (include/x86_64-linux-gnu): a Lua unpacked with `dpkg -x` into a
# prefix (scripts/gpu/fetch_debs.sh) finds it only when that folder is on the include path, and
# without this check the build would stop at its first Lua file instead.
#
# One compile of one line (no link), repeated only when the include folders change.
function(lmkit_check_lua_headers)
  set(_dirs ${LUA_INCLUDE_DIR} ${CMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES})
  set(_checked "${_dirs}|${CMAKE_CXX_COMPILER}|${CMAKE_CXX_FLAGS}")
  if(LMKIT_LUA_HEADERS_CHECKED STREQUAL _checked)
    return()
  endif()
  set(_flags)
  foreach(_dir IN LISTS _dirs)
    list(APPEND _flags "-I${_dir}")
  endforeach()
  set(_source ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/lmkit_lua_headers.cpp)
  file(WRITE ${_source} "#include <lua.hpp>\nint lmkit_lua_headers(lua_State* L) { return lua_gettop(L); }\n")
  set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)  # compile only: the library is checked by linking lmkit
  try_compile(_compiles ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/lmkit_lua_headers ${_source}
              COMPILE_DEFINITIONS ${_flags}
              CXX_STANDARD 17
              OUTPUT_VARIABLE _output)
  if(NOT _compiles)
    unset(LMKIT_LUA_HEADERS_CHECKED CACHE)
    # The compiler's own complaint, without the build tool's chatter around it.
    string(REGEX MATCHALL "[^\n]*(error|Error)[^\n]*" _errors "${_output}")
    list(JOIN _errors "\n  " _errors)
    list(JOIN _dirs "\n    " _dir_lines)
    # Where the missing header is, when it is beside the Lua headers as Debian and `dpkg -x` put it.
    get_filename_component(_include_root "${LUA_INCLUDE_DIR}" DIRECTORY)
    file(GLOB _multiarch_header "${_include_root}/*/lua5.4-deb-multiarch.h")
    if(_multiarch_header)
      list(GET _multiarch_header 0 _multiarch_header)
      get_filename_component(_multiarch_dir "${_multiarch_header}" DIRECTORY)
      set(_where "here it is ${_multiarch_dir}")
    else()
      set(_multiarch_dir "<prefix>/include/x86_64-linux-gnu")
      set(_where "usually <prefix>/include/x86_64-linux-gnu")
    endif()
    message(FATAL_ERROR
      "lmkit: Lua's headers do not compile: `#include <lua.hpp>` failed with the include folders\n"
      "    ${_dir_lines}\n"
      "The compiler said:\n  ${_errors}\n"
      "Debian's luaconf.h includes lua5.4-deb-multiarch.h, which lives in the multiarch folder beside "
      "the Lua headers' own (${_where}). Put the folder that holds it on every C++ file's include "
      "path: -DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES=${_multiarch_dir} (LUA_INCLUDE_DIR must stay "
      "the one folder holding lua.h: FindLua reads the version there). scripts/gpu/configure.sh does "
      "this for the prefix that scripts/gpu/fetch_debs.sh makes.")
  endif()
  set(LMKIT_LUA_HEADERS_CHECKED "${_checked}" CACHE INTERNAL "The include folders with which lua.hpp compiled")
endfunction()
