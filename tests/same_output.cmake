# Runs two commands and checks their standard outputs are identical, after
# dropping lines that match DROP_REGEX from each (a run's timing stats, say).
#   cmake -DA="prog;arg;..." -DB="prog;arg;..." [-DDROP_REGEX=re] -DWORKDIR=dir -P same_output.cmake
foreach(which A B)
  execute_process(COMMAND ${${which}} WORKING_DIRECTORY ${WORKDIR} OUTPUT_VARIABLE out_${which} ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${${which}} exited ${rc}:\n${err}")
  endif()
  if(DEFINED DROP_REGEX)
    string(REGEX REPLACE "${DROP_REGEX}" "" out_${which} "${out_${which}}")
  endif()
endforeach()
if(NOT out_A STREQUAL out_B)
  message(FATAL_ERROR "outputs differ\n--- ${A}:\n${out_A}\n--- ${B}:\n${out_B}")
endif()
if(out_A STREQUAL "")
  message(FATAL_ERROR "both commands printed nothing")
endif()
