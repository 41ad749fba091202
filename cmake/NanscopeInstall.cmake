# Install rules for the nanscope CMake package and pkg-config file. Included at the end of the
# top-level CMakeLists.txt, after the `nanscope` (hooks/) and `nanscope_cli` (src/cli/) targets
# exist; they install themselves (library, headers, launcher).
#
#   find_package(nanscope 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE nanscope::nanscope)
#
# gives the include directory and libnanscope.so. The package also sets nanscope_LAUNCHER (the
# `nanscope` program), nanscope_LIBRARY (the library to inject) and nanscope_PYTHONPATH (the
# Python helper).
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set(NANSCOPE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/nanscope CACHE STRING
    "Where the nanscope CMake package files are installed (relative to the prefix)")
set(NANSCOPE_INSTALL_PYTHONDIR ${CMAKE_INSTALL_DATADIR}/nanscope/python)

# libnanscope.so has DT_NEEDED libcuda.so.1, which only the NVIDIA driver provides (the toolkit
# ships just stubs/libcuda.so). A consumer's link step checks the undefined symbols of the shared
# libraries it links, so on a build machine without a driver it would fail on libnanscope's cu*
# references. The installed target therefore carries --allow-shlib-undefined: libcuda.so.1 is
# resolved when the program runs, as it is for every CUDA program. This works the same for
# pkg-config (see nanscope.pc.in) and needs no CUDAToolkit in the consumer's configure step.
target_link_options(nanscope INTERFACE $<INSTALL_INTERFACE:LINKER:--allow-shlib-undefined>)

install(EXPORT nanscopeTargets
        NAMESPACE nanscope::
        FILE nanscopeTargets.cmake
        DESTINATION ${NANSCOPE_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/nanscopeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/nanscopeConfig.cmake
  INSTALL_DESTINATION ${NANSCOPE_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_BINDIR CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR NANSCOPE_INSTALL_PYTHONDIR)
# 0.x: minor versions may break the ABI, so only the same major.minor is compatible.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/package/nanscopeConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/nanscopeConfig.cmake
              ${PROJECT_BINARY_DIR}/package/nanscopeConfigVersion.cmake
        DESTINATION ${NANSCOPE_INSTALL_CMAKEDIR})

# pkg-config: relocatable through ${pcfiledir}, so `cmake --install --prefix X` works.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(NANSCOPE_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(NANSCOPE_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH _nanscope_pc_up "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  string(REGEX REPLACE "/$" "" _nanscope_pc_up "${_nanscope_pc_up}")
  set(NANSCOPE_PC_PREFIX "\${pcfiledir}/${_nanscope_pc_up}")
  set(NANSCOPE_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(NANSCOPE_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(NANSCOPE_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/nanscope.pc.in ${PROJECT_BINARY_DIR}/package/nanscope.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/nanscope.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The Python helper (ctypes, nothing to build): PYTHONPATH=<prefix>/share/nanscope/python.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/nanscope DESTINATION ${NANSCOPE_INSTALL_PYTHONDIR}
        PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
# Its version, the library's (nanscope/__init__.py compares the two when it loads the library).
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/package/_version.py
     CONTENT "# Written by cmake --install from include/nanscope/version.h: the library's version too.\nversion = \"${PROJECT_VERSION}\"\n")
install(FILES ${PROJECT_BINARY_DIR}/package/_version.py DESTINATION ${NANSCOPE_INSTALL_PYTHONDIR}/nanscope)
