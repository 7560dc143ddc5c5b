# The compiler cache: ccache, set up so that every clone on a machine shares one cache.
#
# Plain `-DCMAKE_CXX_COMPILER_LAUNCHER=ccache` hits only within one folder and never for a source
# that uses the precompiled Torch header — most of lmkit's (ccache: "could not use precompiled
# header"). So ccache runs with:
#   CCACHE_BASEDIR   absolute paths under the source folder are hashed relative to the build folder,
#                    so a clone at another path hits what this one stored (and the reverse);
#   CCACHE_NOHASHDIR the build folder itself stays out of the hash (it only reaches debug information,
#                    whose compilation directory is then the first clone's);
#   CCACHE_SLOPPINESS pch_defines,time_macros: what ccache needs to cache a source compiled with a
#                    precompiled header; include_file_mtime,include_file_ctime: the precompiled
#                    header is written moments before its users read it, and a file modified during
#                    the compilation is otherwise not cached.
# The settings travel on the command line (`cmake -E env`), not in the user's ccache.conf.
# LMKIT_CCACHE=OFF builds without it; a launcher given by hand (CMAKE_CXX_COMPILER_LAUNCHER) wins,
# except a bare `ccache` (what older build folders were configured with), which gets these settings.

find_program(LMKIT_CCACHE_PROGRAM ccache)
option(LMKIT_CCACHE "Compile through ccache, shared by every clone on this machine (when ccache is installed)" ON)

if(LMKIT_CCACHE AND LMKIT_CCACHE_PROGRAM
   AND (NOT CMAKE_CXX_COMPILER_LAUNCHER OR CMAKE_CXX_COMPILER_LAUNCHER MATCHES "^([^;]*/)?ccache$"))
  set(_lmkit_ccache_launcher
      "${CMAKE_COMMAND}" -E env
      "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}"
      CCACHE_NOHASHDIR=1
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      "${LMKIT_CCACHE_PROGRAM}")
  set(CMAKE_C_COMPILER_LAUNCHER ${_lmkit_ccache_launcher})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_lmkit_ccache_launcher})
  message(STATUS "lmkit: compiling through ${LMKIT_CCACHE_PROGRAM} (base folder ${PROJECT_SOURCE_DIR})")
elseif(NOT LMKIT_CCACHE AND CMAKE_CXX_COMPILER_LAUNCHER MATCHES "^([^;]*/)?ccache$")
  # OFF means off, also in a build folder configured earlier with a bare ccache.
  set(CMAKE_C_COMPILER_LAUNCHER "")
  set(CMAKE_CXX_COMPILER_LAUNCHER "")
endif()
