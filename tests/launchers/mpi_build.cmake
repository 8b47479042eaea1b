# cmake -P script behind the launcher.mpi_build test: configures and builds
# this source tree a second time, with -DLCI_WITH_MPI=ON and the MPI C++
# compiler wrapper MPI_CXX (chosen explicitly: with both MPICH and Open MPI
# installed, the unsuffixed wrappers follow the alternatives system), into
# BUILD_DIR. Builds only what the MPI launcher tests run: hello_world,
# lci_ring, lci_mpi_interop. Prints "SKIP: ..." when MPI_CXX is missing.
foreach(var SOURCE_DIR BUILD_DIR GENERATOR CXX_COMPILER MPI_CXX)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "mpi_build.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT EXISTS "${MPI_CXX}")
  message("SKIP: ${MPI_CXX} is not installed (apt-get install libmpich-dev)")
  file(REMOVE_RECURSE "${BUILD_DIR}")
  return()
endif()

function(run what)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "[mpi build] ${what}: ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "[mpi build] ${what} failed (${rc})")
  endif()
endfunction()

set(gen_args -G ${GENERATOR})
if(MAKE_PROGRAM)
  list(APPEND gen_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
run("configure" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BUILD_DIR} ${gen_args}
    -DCMAKE_BUILD_TYPE=Debug
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DLCI_WITH_MPI=ON
    -DMPI_CXX_COMPILER=${MPI_CXX}
    -DLCI_BUILD_BENCHMARKS=OFF)
run("build" ${CMAKE_COMMAND} --build ${BUILD_DIR}
    --target hello_world lci_ring lci_mpi_interop)
message(STATUS "[mpi build] built ${BUILD_DIR} with ${MPI_CXX}")
