# Run at build time (cmake -P): writes OUTPUT with the source tree's git revision, e.g.
#   #define LMKIT_GIT_REVISION "15a83a7e2b1c-dirty"
# (empty outside a git checkout, e.g. a release tarball or a package build), and rewrites the file
# only when the revision changed, so that a build after a commit recompiles one file.
#   cmake -DSOURCE_DIR=... -DOUTPUT=... -P LmkitGitRevision.cmake
set(revision "")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12 --exclude "*"
                  OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    set(revision "")
  endif()
endif()
set(content "// Generated at build time by cmake/LmkitGitRevision.cmake.\n#pragma once\n#define LMKIT_GIT_REVISION \"${revision}\"\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUTPUT}" "${content}")
endif()
