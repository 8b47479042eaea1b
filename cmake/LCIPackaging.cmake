# Package configuration for find_package(LCI): included by the top-level
# CMakeLists.txt after the `lci` target (src/) is defined; src/CMakeLists.txt
# puts the library into the export set LCITargets.
#
# A consumer writes
#   find_package(LCI 2 REQUIRED)
#   target_link_libraries(app PRIVATE LCI::lci)   # or LCI::LCI
include(CMakePackageConfigHelpers)

set(LCI_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/LCI CACHE STRING
    "Where LCIConfig.cmake is installed (relative to the prefix)")
mark_as_advanced(LCI_INSTALL_CMAKEDIR)

# Read by LCIConfig.cmake.in: a static liblci carries libfabric (when built
# with the ofi backend, LCI_HAVE_OFI) and Threads in its link interface, so
# the config must find them again.
get_target_property(_lci_type lci TYPE)
if(_lci_type STREQUAL "STATIC_LIBRARY")
  set(LCI_CONFIG_STATIC ON)
else()
  set(LCI_CONFIG_STATIC OFF)
endif()
unset(_lci_type)

install(EXPORT LCITargets
  NAMESPACE LCI::
  FILE LCITargets.cmake
  DESTINATION ${LCI_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/LCIConfig.cmake.in
  ${PROJECT_BINARY_DIR}/LCIConfig.cmake
  INSTALL_DESTINATION ${LCI_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/LCIConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/LCIConfig.cmake
  ${PROJECT_BINARY_DIR}/LCIConfigVersion.cmake
  DESTINATION ${LCI_INSTALL_CMAKEDIR})

# lci.pc for pkg-config users (`pkg-config --cflags --libs lci`; add
# --static for a static liblci). Relocatable: the prefix is derived from
# the file's own directory.
file(RELATIVE_PATH LCI_PC_TO_PREFIX
     /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
set(LCI_PC_REQUIRES_PRIVATE "")
if(LCI_HAVE_OFI)
  string(APPEND LCI_PC_REQUIRES_PRIVATE " libfabric")
endif()
if(LCI_HAVE_IBV)
  string(APPEND LCI_PC_REQUIRES_PRIVATE " libibverbs")
endif()
if(LCI_HAVE_PMIX)
  string(APPEND LCI_PC_REQUIRES_PRIVATE " pmix")
endif()
set(LCI_PC_LIBS_PRIVATE "")
if(LCI_WITH_MPI)
  foreach(_lci_mpi_lib ${MPI_CXX_LIBRARIES})
    string(APPEND LCI_PC_LIBS_PRIVATE " ${_lci_mpi_lib}")
  endforeach()
endif()
string(STRIP "${LCI_PC_REQUIRES_PRIVATE}" LCI_PC_REQUIRES_PRIVATE)
configure_file(${CMAKE_CURRENT_LIST_DIR}/lci.pc.in
               ${PROJECT_BINARY_DIR}/lci.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/lci.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
