# kplane_test(<name> SRCS <files...> DEPS <targets...> [LABELS <labels...>] [TIMEOUT <s>]
#             [ONE_PROCESS])
#
# One gtest binary; each TEST becomes its own ctest entry (discovered when
# ctest runs, so building stays fast), or with ONE_PROCESS the binary is one
# ctest entry (for suites that share an expensive setup across tests). LABELS defaults to "unit": fast tests
# that run in well under a minute altogether. Use "slow" for tests that start
# processes, sleep on real timers or run many seeds, "e2e" for real-process
# end-to-end tests.
function(kplane_test name)
  cmake_parse_arguments(ARG "ONE_PROCESS" "TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  if(ARG_ONE_PROCESS)
    # One ctest test running the whole binary: its suites share what they
    # set up once (e.g. one control plane per suite) instead of a process
    # per test case.
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES
      LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
  else()
    gtest_discover_tests(${name}
      DISCOVERY_MODE PRE_TEST
      PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
  endif()
endfunction()
