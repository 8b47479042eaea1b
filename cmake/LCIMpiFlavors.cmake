# MPI flavors: lci_mpi_<name> INTERFACE targets, one per MPI library found
# (included by the top-level CMakeLists.txt, before the examples; used by
# examples/with_mpi, the MPI twin of the benchmarks and apps/kmer). The
# names found are in the global property LCI_BENCH_MPI_FLAVORS.
#
# Debian installs MPICH and Open MPI side by side, each with its own compiler
# wrapper (mpicxx.mpich, mpicxx.openmpi); CMake's FindMPI sees only one of
# them per build tree. So we ask each wrapper for its compile and link flags
# ourselves. Choose the wrappers with LCI_BENCH_MPI_WRAPPERS (a list of
# name=wrapper pairs), or set it empty to fall back to find_package(MPI)
# (one library, suffix "mpi").
set(LCI_BENCH_MPI_WRAPPERS "mpich=mpicxx.mpich;openmpi=mpicxx.openmpi"
    CACHE STRING "MPI twin: name=wrapper pairs to build against")

set(lci_mpi_flavors "")
set_property(GLOBAL PROPERTY LCI_BENCH_MPI_FLAVORS "")
if(LCI_SANITIZE)
  # the MPI libraries are not instrumented: leak and race reports from
  # inside them would drown the twin's own
  message(STATUS "MPI flavors: not built with LCI_SANITIZE=${LCI_SANITIZE}")
  return()
endif()

# lci_mpi_flavor(NAME WRAPPER): an INTERFACE target lci_mpi_<NAME> with the
# wrapper's flags, if the wrapper exists and answers.
function(lci_mpi_flavor name wrapper)
  find_program(LCI_MPI_WRAPPER_${name} ${wrapper})
  if(NOT LCI_MPI_WRAPPER_${name})
    message(STATUS "MPI flavors: ${wrapper} not found, no ${name} build")
    return()
  endif()
  set(w ${LCI_MPI_WRAPPER_${name}})
  # MPICH answers -compile_info / -link_info, Open MPI --showme:*
  execute_process(COMMAND ${w} -compile_info OUTPUT_VARIABLE cflags
                  ERROR_QUIET RESULT_VARIABLE rc1
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${w} -link_info OUTPUT_VARIABLE lflags
                  ERROR_QUIET RESULT_VARIABLE rc2
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(mpich_style FALSE)
  if(rc1 EQUAL 0 AND rc2 EQUAL 0 AND cflags AND lflags)
    set(mpich_style TRUE)  # "g++ -I... ": the compiler comes first
  else()
    execute_process(COMMAND ${w} --showme:compile OUTPUT_VARIABLE cflags
                    RESULT_VARIABLE rc1 OUTPUT_STRIP_TRAILING_WHITESPACE)
    execute_process(COMMAND ${w} --showme:link OUTPUT_VARIABLE lflags
                    RESULT_VARIABLE rc2 OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0)
      message(STATUS "MPI flavors: ${w} gives no flags, no ${name} build")
      return()
    endif()
  endif()
  separate_arguments(cflags UNIX_COMMAND "${cflags}")
  separate_arguments(lflags UNIX_COMMAND "${lflags}")
  if(mpich_style)
    list(REMOVE_AT cflags 0)
    list(REMOVE_AT lflags 0)
  endif()
  # only what the C++ sources need: include paths and defines to compile;
  # the link line goes after our objects, so as-needed linkers keep it
  set(compile_opts "")
  foreach(f IN LISTS cflags)
    if(f MATCHES "^-[ID]")
      list(APPEND compile_opts ${f})
    endif()
  endforeach()
  add_library(lci_mpi_${name} INTERFACE)
  target_compile_options(lci_mpi_${name} INTERFACE ${compile_opts})
  # the C API only: no C++ bindings (and none of their warnings)
  target_compile_definitions(lci_mpi_${name} INTERFACE OMPI_SKIP_MPICXX=1
                             MPICH_SKIP_MPICXX=1)
  target_link_libraries(lci_mpi_${name} INTERFACE ${lflags})
  message(STATUS "MPI flavors: ${name} via ${w}")
  set(lci_mpi_flavors ${lci_mpi_flavors} ${name} PARENT_SCOPE)
endfunction()

foreach(pair IN LISTS LCI_BENCH_MPI_WRAPPERS)
  string(REPLACE "=" ";" pair "${pair}")
  list(GET pair 0 name)
  list(GET pair 1 wrapper)
  lci_mpi_flavor(${name} ${wrapper})
endforeach()

if(NOT lci_mpi_flavors)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    add_library(lci_mpi_mpi INTERFACE)
    target_link_libraries(lci_mpi_mpi INTERFACE MPI::MPI_CXX)
    target_compile_definitions(lci_mpi_mpi INTERFACE OMPI_SKIP_MPICXX=1
                               MPICH_SKIP_MPICXX=1)
    set(lci_mpi_flavors mpi)
    message(STATUS "MPI flavors: ${MPI_CXX_LIBRARY_VERSION_STRING}")
  else()
    message(STATUS "MPI flavors: no MPI found, not built "
                   "(apt-get install libmpich-dev libopenmpi-dev)")
  endif()
endif()

# read by tests/bench
set_property(GLOBAL PROPERTY LCI_BENCH_MPI_FLAVORS "${lci_mpi_flavors}")
