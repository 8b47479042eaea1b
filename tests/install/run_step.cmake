# run(WHAT COMMAND...) for the install and subproject checks (cmake -P):
# prints the command, runs it, prints its output, stops the script naming
# WHAT when it fails, and leaves the output in `run_output`. The caller sets
# `check_name` (e.g. "install check") for the messages.
function(run what)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "[${check_name}] ${what}: ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "[${check_name}] ${what} failed (${rc})")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()
