# Installs headers, libraries and a package config so that another CMake project can
#   find_package(kolo REQUIRED)
#   target_link_libraries(app PRIVATE kolo::kolo)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# check.h is for kolo's own sources (KOLO_CHECK); no installed header includes it.
install(DIRECTORY include/kolo DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        PATTERN check.h EXCLUDE)
install(TARGETS kolo kolo_runtime kolo_ops kolo_models
  EXPORT koloTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT koloTargets NAMESPACE kolo:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kolo)
install(TARGETS kolorun RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})  # the launcher

configure_package_config_file(cmake/koloConfig.cmake.in
  "${PROJECT_BINARY_DIR}/koloConfig.cmake"
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kolo)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/koloConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/koloConfig.cmake"
  "${PROJECT_BINARY_DIR}/koloConfigVersion.cmake"
  cmake/FindNCCL.cmake
  cmake/FindCUDNN.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kolo)
