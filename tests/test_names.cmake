# Fails when a doctest case's name holds a ';'. doctest_discover_tests
# registers each case as a ctest entry that runs `--test-case=NAME`; CMake
# splits a name at ';' into two entries whose filters match no case, and a
# doctest run that matches nothing exits 0. Such a case would never run
# while ctest showed it passed (eight did, until this check).
# Usage: cmake -DEXE=path/to/doctest_binary -P test_names.cmake
execute_process(COMMAND ${EXE} --list-test-cases --no-version OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --list-test-cases exited ${rc}")
endif()
string(FIND "${out}" ";" at)
if(NOT at EQUAL -1)
  string(REPLACE ";" "<;>" shown "${out}")
  message(FATAL_ERROR "a test case name holds ';' (ctest would split it and run nothing):\n${shown}")
endif()
