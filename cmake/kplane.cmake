# kplane_test(<name> SRCS <files...> DEPS <targets...> [LABELS <labels...>] [TIMEOUT <s>])
#
# One gtest binary; each TEST becomes its own ctest entry (discovered when
# ctest runs, so building stays fast). LABELS defaults to "unit": fast tests
# that run in well under a minute altogether. Use "slow" for tests that start
# processes, sleep on real timers or run many seeds, "e2e" for real-process
# end-to-end tests.
function(kplane_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
endfunction()
