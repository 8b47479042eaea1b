# cmake -P script behind the install.subproject test: configures
# tests/install/subproject with LCI included by add_subdirectory (then
# builds the consumer and runs it) and by FetchContent (configure only: it
# is add_subdirectory underneath, and the build is the same).
foreach(var LCI_SOURCE_DIR WORK_DIR SUBPROJECT_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "subproject_check.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})

set(check_name "subproject check")
include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)

set(gen_args -G ${GENERATOR})
if(MAKE_PROGRAM)
  list(APPEND gen_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
foreach(via add_subdirectory FetchContent)
  set(build ${WORK_DIR}/${via})
  run("configure (${via})" ${CMAKE_COMMAND} -S ${SUBPROJECT_DIR} -B ${build}
      ${gen_args} -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
      -DLCI_SOURCE_DIR=${LCI_SOURCE_DIR} -DLCI_VIA=${via})
  if(NOT run_output MATCHES "LCI included with ${via}: tests, examples and benchmarks off")
    message(FATAL_ERROR "[subproject check] ${via}: no confirmation")
  endif()
endforeach()
run("build (add_subdirectory)" ${CMAKE_COMMAND} --build
    ${WORK_DIR}/add_subdirectory --target lci_subproject_consumer)
run("run the consumer" ${WORK_DIR}/add_subdirectory/lci_subproject_consumer)
if(NOT run_output MATCHES "consumer: rank 0 of 1 received 'hello from the installed LCI'")
  message(FATAL_ERROR "[subproject check] unexpected consumer output")
endif()
message("subproject check passed")
