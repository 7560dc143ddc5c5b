# Run at build time by lmkit_add_gtest_suites() (cmake -P): lists a GoogleTest program's cases
# and writes the CTest script that registers one test per suite.
#   -DTEST_EXECUTABLE  the program
#   -DTEST_FILTER      GoogleTest filter of the cases to list
#   -DTEST_SEPARATE    comma-separated Suite.Case names that get a test of their own
#   -DTEST_LIST        variable that the written script sets to every test name
#   -DOUTPUT           the script to write
cmake_minimum_required(VERSION 3.24)  # a script's own policies (IN_LIST)

execute_process(
  COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests "--gtest_filter=${TEST_FILTER}"
  OUTPUT_VARIABLE listing
  ERROR_VARIABLE errors
  RESULT_VARIABLE status
  TIMEOUT 120)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "Listing the tests of ${TEST_EXECUTABLE} failed (${status}):\n${listing}\n${errors}")
endif()

string(REPLACE "," ";" separate "${TEST_SEPARATE}")
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")

set(suites "")
set(suite "")
foreach(line IN LISTS lines)
  # "Suite." or "Prefix/Suite/0.  # TypeParam = ..."; a case is indented: "  Case  # GetParam() = ...".
  string(REGEX REPLACE "  #.*$" "" line "${line}")
  if(line MATCHES "^([^ ].*)\\.$")
    set(suite "${CMAKE_MATCH_1}")
    list(APPEND suites "${suite}")
    set("cases_of_${suite}" "")
  elseif(line MATCHES "^  ([^ ]+)$" AND suite)
    list(APPEND "cases_of_${suite}" "${CMAKE_MATCH_1}")
  endif()
endforeach()

# Bracket arguments keep names and filters as written (a filter holds '*', ':' and '-').
set(script "# Written by cmake/LmkitGtestSuitesDiscover.cmake from ${TEST_EXECUTABLE} --gtest_list_tests\n")
set(names "")
foreach(suite IN LISTS suites)
  set(own "")
  foreach(case IN LISTS "cases_of_${suite}")
    if("${suite}.${case}" IN_LIST separate)
      list(APPEND own "${suite}.${case}")
    endif()
  endforeach()
  foreach(name IN LISTS own)
    string(APPEND script "add_test([==[${name}]==] [==[${TEST_EXECUTABLE}]==] [==[--gtest_filter=${name}]==])\n"
                         "set_tests_properties([==[${name}]==] PROPERTIES SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==])\n")
    list(APPEND names "${name}")
  endforeach()
  list(LENGTH "cases_of_${suite}" all)
  list(LENGTH own separated)
  if(all GREATER separated)
    set(filter "${suite}.*")
    if(own)
      list(JOIN own ":" excluded)
      set(filter "${filter}-${excluded}")
    endif()
    # No skip pattern: GoogleTest prints "[  PASSED  ] 0 tests." when every case failed too, and a
    # skip pattern wins over the exit code. A suite passes when none of its cases failed.
    string(APPEND script "add_test([==[${suite}]==] [==[${TEST_EXECUTABLE}]==] [==[--gtest_filter=${filter}]==])\n")
    list(APPEND names "${suite}")
  endif()
endforeach()
list(JOIN names "]==] [==[" quoted)
string(APPEND script "set(${TEST_LIST} [==[${quoted}]==])\n")
file(WRITE "${OUTPUT}" "${script}")
