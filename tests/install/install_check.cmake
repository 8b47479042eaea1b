# cmake -P script behind the install.find_package_consumer test.
#
#  1. cmake --install LCI_BUILD_DIR --prefix WORK_DIR/prefix (a fresh prefix)
#  2. checks the installed files (headers, library, package config, lcrun)
#  3. configures CONSUMER_SOURCE_DIR with CMAKE_PREFIX_PATH=the prefix only
#     and checks that find_package found LCI there (not in the build tree)
#  4. builds it and runs its programs (C++ linked to LCI::lci and LCI::LCI;
#     C through lci.h)
#  5. runs the installed lci_info
#  6. builds the consumer with pkg-config (lci.pc) alone and runs it (the
#     C++ program and the C one)
foreach(var LCI_BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "install_check.cmake: -D${var}=... is required")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

set(check_name "install check")
include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)

# 1. install
set(config_args)
if(CONFIG)
  set(config_args --config ${CONFIG})
endif()
run("install" ${CMAKE_COMMAND} --install ${LCI_BUILD_DIR} --prefix ${prefix}
    ${config_args})

# 2. the installed files
file(GLOB_RECURSE cfg LIST_DIRECTORIES false ${prefix}/*/LCIConfig.cmake)
file(GLOB_RECURSE cfgv LIST_DIRECTORIES false
     ${prefix}/*/LCIConfigVersion.cmake)
file(GLOB_RECURSE targets LIST_DIRECTORIES false ${prefix}/*/LCITargets.cmake)
file(GLOB_RECURSE libs LIST_DIRECTORIES false
     ${prefix}/*/liblci.so* ${prefix}/*/liblci.a)
foreach(f include/lci.hpp include/lci_binding.hpp include/lci.h
         include/lci_c_binding.h)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "[install check] ${f} is not installed")
  endif()
endforeach()
foreach(v cfg cfgv targets libs)
  if(NOT ${v})
    message(FATAL_ERROR "[install check] nothing installed for ${v}")
  endif()
endforeach()
if(EXPECT_LCRUN AND NOT EXISTS ${prefix}/bin/lcrun)
  message(FATAL_ERROR "[install check] bin/lcrun is not installed")
endif()
if(NOT EXISTS ${prefix}/bin/lci_info)
  message(FATAL_ERROR "[install check] bin/lci_info is not installed")
endif()
file(GLOB_RECURSE pcs LIST_DIRECTORIES false ${prefix}/*/pkgconfig/lci.pc)
if(NOT pcs)
  message(FATAL_ERROR "[install check] lci.pc is not installed")
endif()
message(STATUS "[install check] installed: ${cfg} ${libs}")

# 3. configure the consumer against the prefix alone
set(gen_args -G ${GENERATOR})
if(MAKE_PROGRAM)
  list(APPEND gen_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
set(build_type_args)
if(CONFIG)
  set(build_type_args -DCMAKE_BUILD_TYPE=${CONFIG})
endif()
set(c_compiler_args)
if(C_COMPILER)
  set(c_compiler_args -DCMAKE_C_COMPILER=${C_COMPILER})
endif()
run("configure consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR}
    -B ${consumer_build} ${gen_args} ${build_type_args}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    ${c_compiler_args}
    -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
    "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}"
    "-DCMAKE_C_FLAGS=${CONSUMER_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}")
file(STRINGS ${consumer_build}/CMakeCache.txt lci_dir REGEX "^LCI_DIR:")
string(REGEX REPLACE "^LCI_DIR:[A-Z]+=" "" lci_dir "${lci_dir}")
file(REAL_PATH "${prefix}" real_prefix)
file(REAL_PATH "${lci_dir}" real_lci_dir)
string(FIND "${real_lci_dir}" "${real_prefix}/" pos)
if(NOT pos EQUAL 0)
  message(FATAL_ERROR
          "[install check] LCI_DIR='${lci_dir}' is not under ${prefix}")
endif()

# 4. build and run
run("build consumer" ${CMAKE_COMMAND} --build ${consumer_build} ${config_args})
foreach(exe lci_consumer lci_consumer_LCI lci_consumer_c)
  set(exe_path ${consumer_build}/${exe})
  if(NOT EXISTS ${exe_path})
    set(exe_path ${consumer_build}/${CONFIG}/${exe})  # multi-config generators
  endif()
  if(NOT EXISTS ${exe_path})
    message(FATAL_ERROR "[install check] ${exe} was not built")
  endif()
  run("run ${exe}" ${exe_path})
  if(NOT run_output MATCHES "consumer: rank 0 of 1 received 'hello from the installed LCI'")
    message(FATAL_ERROR "[install check] unexpected output from ${exe}")
  endif()
endforeach()
# a program written for upstream LCI 2 (lct.h, its names), unchanged
set(exe_path ${consumer_build}/lci_consumer_upstream)
if(NOT EXISTS ${exe_path})
  set(exe_path ${consumer_build}/${CONFIG}/lci_consumer_upstream)
endif()
run("run lci_consumer_upstream" ${exe_path} --nthreads 3)
if(NOT run_output MATCHES "upstream consumer: 3 active messages of 100000 bytes")
  message(FATAL_ERROR "[install check] unexpected output from lci_consumer_upstream")
endif()

# 5. the installed lci_info runs from the prefix
run("run lci_info" ${prefix}/bin/lci_info --version)
if(NOT run_output MATCHES "^lci_info \\(LCI\\) 2\\.")
  message(FATAL_ERROR "[install check] unexpected lci_info --version output")
endif()

# 6. pkg-config: compile and link the consumer with `pkg-config --cflags
#    --libs lci` from the prefix alone, and run it
list(GET pcs 0 pc)
get_filename_component(pc_dir ${pc} DIRECTORY)
find_program(PKG_CONFIG_EXE pkg-config REQUIRED)
run("pkg-config" ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir}
    ${PKG_CONFIG_EXE} --cflags --libs lci)
string(STRIP "${run_output}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run("pkg-config libdir" ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir}
    ${PKG_CONFIG_EXE} --variable=libdir lci)
string(STRIP "${run_output}" pc_libdir)
file(REAL_PATH "${pc_libdir}" real_pc_libdir)
string(FIND "${real_pc_libdir}" "${real_prefix}/" pos)
if(NOT pos EQUAL 0)
  message(FATAL_ERROR "[install check] lci.pc's libdir ${pc_libdir} is not "
                      "under ${prefix}")
endif()
separate_arguments(consumer_flags UNIX_COMMAND "${CONSUMER_FLAGS}")
run("build consumer with pkg-config" ${CXX_COMPILER} -std=c++17
    ${consumer_flags} ${CONSUMER_SOURCE_DIR}/main.cpp ${pc_flags}
    -Wl,-rpath,${pc_libdir} -o ${WORK_DIR}/lci_consumer_pc)
run("run lci_consumer_pc" ${WORK_DIR}/lci_consumer_pc)
if(NOT run_output MATCHES "consumer: rank 0 of 1 received 'hello from the installed LCI'")
  message(FATAL_ERROR "[install check] unexpected output from lci_consumer_pc")
endif()
# the C program (lci.h) with the same flags and a C compiler
if(C_COMPILER)
  run("build C consumer with pkg-config" ${C_COMPILER} -std=c99
      ${consumer_flags} ${CONSUMER_SOURCE_DIR}/main.c ${pc_flags}
      -Wl,-rpath,${pc_libdir} -o ${WORK_DIR}/lci_consumer_c_pc)
  run("run lci_consumer_c_pc" ${WORK_DIR}/lci_consumer_c_pc)
  if(NOT run_output MATCHES "consumer: rank 0 of 1 received 'hello from the installed LCI'")
    message(FATAL_ERROR "[install check] unexpected output from lci_consumer_c_pc")
  endif()
endif()
message("install check passed")
