# The installed package (DESIGN.md §3, §8): a project that does find_package(tessel) gets the
# imported target tessel::tessel (libtessel.so, the DSL headers, C++20, Boost headers for
# Boost.Hana) and needs neither MLIR nor LLVM: they are inside libtessel.so, hidden.
#
#   <prefix>/lib/libtessel.so
#   <prefix>/include/tessel/**                    dsl/include: Boost.Hana and the standard library only
#   <prefix>/lib/cmake/tessel/tesselConfig.cmake, tesselConfigVersion.cmake, tesselTargets*.cmake
#
# (lib is CMAKE_INSTALL_LIBDIR: lib/<multiarch> on Debian with prefix /usr.) Examples and tools
# install into bin/ with RPATH $ORIGIN/../lib. tests/package checks the whole path in CI: install
# into a fresh prefix, configure examples/consumer against it, build and run it.
include(CMakePackageConfigHelpers)

set(TESSEL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tessel)
# Exported as tessel::dsl, the name the build tree's alias has.
set_target_properties(tessel_dsl PROPERTIES EXPORT_NAME dsl)
# (The include directory comes with tessel::dsl: its $<INSTALL_INTERFACE:include>.)
install(TARGETS tessel tessel_dsl EXPORT tesselTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT tessel)
install(DIRECTORY ${TESSEL_SOURCE_DIR}/dsl/include/tessel
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT tessel
        FILES_MATCHING PATTERN "*.hpp")
install(EXPORT tesselTargets NAMESPACE tessel:: DESTINATION ${TESSEL_INSTALL_CMAKEDIR} COMPONENT tessel)

# Generated into a folder find_package does not search: the build tree has no tesselTargets.cmake
# (the package is the installed one), so a tesselConfig.cmake at the build tree's top made
# `-DCMAKE_PREFIX_PATH=<build>` fail with "include could not find ... tesselTargets.cmake"
# instead of "not found, install it first".
set(_tessel_config_dir ${TESSEL_BINARY_DIR}/package-config)
configure_package_config_file(${TESSEL_SOURCE_DIR}/cmake/tesselConfig.cmake.in
                              ${_tessel_config_dir}/tesselConfig.cmake
                              INSTALL_DESTINATION ${TESSEL_INSTALL_CMAKEDIR})
# 0.x: a minor release may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(${_tessel_config_dir}/tesselConfigVersion.cmake
                                 VERSION ${tessel_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${_tessel_config_dir}/tesselConfig.cmake ${_tessel_config_dir}/tesselConfigVersion.cmake
        DESTINATION ${TESSEL_INSTALL_CMAKEDIR} COMPONENT tessel)
