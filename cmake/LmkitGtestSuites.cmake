# lmkit_add_gtest_suites(): one CTest test per GoogleTest suite, not per case.
#
# Every process of the test program loads Torch and runs its static initializers: 0.7 s before
# the first case (1.8 s under ASan with leak checking). With ~400 cases that start-up was most of
# the C++ suite's time on a 2-core machine; one process per suite (~90) keeps it small, and a
# suite's cases still run in the order they are written, as in a developer's plain run of the
# program. A failing suite prints GoogleTest's list of its failed cases.
#
#   lmkit_add_gtest_suites(TARGET lmkit_tests
#     FILTER "-OpsCudaTest.*"             # cases left to other registrations
#     SEPARATE Suite.Case ...             # cases that get a CTest test of their own (their own
#                                         # environment, say); the suite runs without them
#     TEST_LIST lmkit_cpp_tests)          # the variable, set in CTest's scope, naming every test
#
# The list is read from the built program after each link (like gtest_discover_tests), written to
# a CTest script that the test directory includes. Properties are set by a later TEST_INCLUDE_FILES
# script that uses ${TEST_LIST}.

set(_lmkit_gtest_suites_script "${CMAKE_CURRENT_LIST_DIR}/LmkitGtestSuitesDiscover.cmake")

function(lmkit_add_gtest_suites)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;FILTER;TEST_LIST" "SEPARATE")
  set(output "${CMAKE_CURRENT_BINARY_DIR}/${arg_TARGET}_suites.cmake")
  list(JOIN arg_SEPARATE "," separate)
  # Rewritten whenever the program is relinked, this script changes or the arguments change (ninja
  # compares the command line), as part of the default build.
  add_custom_command(OUTPUT "${output}"
    COMMAND "${CMAKE_COMMAND}"
            "-DTEST_EXECUTABLE=$<TARGET_FILE:${arg_TARGET}>"
            "-DTEST_FILTER=${arg_FILTER}"
            "-DTEST_SEPARATE=${separate}"
            "-DTEST_LIST=${arg_TEST_LIST}"
            "-DOUTPUT=${output}"
            -P "${_lmkit_gtest_suites_script}"
    DEPENDS ${arg_TARGET} "${_lmkit_gtest_suites_script}"
    COMMENT "Listing the GoogleTest suites of ${arg_TARGET}"
    VERBATIM)
  add_custom_target(${arg_TARGET}_suites ALL DEPENDS "${output}")
  # Until the first build there is nothing to include; CTest then says the suites are missing.
  set(loader "${CMAKE_CURRENT_BINARY_DIR}/${arg_TARGET}_suites_include.cmake")
  file(WRITE "${loader}"
    "if(EXISTS \"${output}\")\n"
    "  include(\"${output}\")\n"
    "else()\n"
    "  add_test(${arg_TARGET}_NOT_BUILT ${arg_TARGET}_NOT_BUILT)\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${loader}")
endfunction()
