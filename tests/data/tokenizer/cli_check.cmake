# Runs mstar-tokenize with a file on standard input and checks its exit code
# and output.
#   cmake -DCMD="prog;arg;..." -DINPUT=file [-DEXPECT_RC=n] [-DGOLDEN=file]
#         [-DSTDOUT_REGEX=re] [-DSTDERR_REGEX=re] -P cli_check.cmake
execute_process(COMMAND ${CMD} INPUT_FILE ${INPUT} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT DEFINED EXPECT_RC)
  set(EXPECT_RC 0)
endif()
if(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED GOLDEN)
  file(READ ${GOLDEN} want)
  if(NOT out STREQUAL want)
    message(FATAL_ERROR "output differs from ${GOLDEN}\n--- got:\n${out}\n--- want:\n${want}")
  endif()
endif()
if(DEFINED STDOUT_REGEX AND NOT out MATCHES "${STDOUT_REGEX}")
  message(FATAL_ERROR "stdout does not match '${STDOUT_REGEX}':\n${out}")
endif()
if(DEFINED STDERR_REGEX AND NOT err MATCHES "${STDERR_REGEX}")
  message(FATAL_ERROR "stderr does not match '${STDERR_REGEX}':\n${err}")
endif()
