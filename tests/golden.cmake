# Runs a command and compares its standard output with a golden file.
#   cmake -DCMD="prog;arg;..." -DGOLDEN=file -DWORKDIR=dir [-DEXPECT_RC=n] -P golden.cmake
# Regenerate after an intended change with tools/update-goldens.sh.
execute_process(COMMAND ${CMD} WORKING_DIRECTORY ${WORKDIR} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT DEFINED EXPECT_RC)
  set(EXPECT_RC 0)
endif()
if(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}\nstdout:\n${out}\nstderr:\n${err}")
endif()
file(READ ${GOLDEN} want)
if(NOT out STREQUAL want)
  message(FATAL_ERROR "output differs from ${GOLDEN}\n--- got:\n${out}\n--- want:\n${want}")
endif()
