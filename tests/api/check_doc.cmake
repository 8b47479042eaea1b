execute_process(COMMAND ${PYTHON} ${GEN} --doc ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gen.py --doc failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${DOC}
                RESULT_VARIABLE diff)
if(NOT diff EQUAL 0)
  message(FATAL_ERROR "docs/ATTRIBUTES.md is stale: run "
                      "python3 src/api/gen.py --doc docs/ATTRIBUTES.md")
endif()
