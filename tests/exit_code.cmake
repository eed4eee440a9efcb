# Runs a command and checks its exit code and, optionally, that its standard
# error and output match regular expressions.
#   cmake -DCMD="prog;arg;..." -DEXPECT_RC=n [-DSTDERR_REGEX=re] [-DSTDOUT_REGEX=re] [-DWORKDIR=dir] -P exit_code.cmake
if(NOT DEFINED WORKDIR)
  set(WORKDIR .)
endif()
execute_process(COMMAND ${CMD} WORKING_DIRECTORY ${WORKDIR} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED STDERR_REGEX AND NOT err MATCHES "${STDERR_REGEX}")
  message(FATAL_ERROR "standard error does not match '${STDERR_REGEX}':\n${err}")
endif()
if(DEFINED STDOUT_REGEX AND NOT out MATCHES "${STDOUT_REGEX}")
  message(FATAL_ERROR "standard output does not match '${STDOUT_REGEX}':\n${out}")
endif()
