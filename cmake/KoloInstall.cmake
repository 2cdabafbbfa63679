# Installs headers, libraries and a package config so that another CMake project can
#   find_package(kolo REQUIRED)
#   target_link_libraries(app PRIVATE kolo::kolo)
# and, where kolo was built with LibTorch (KOLO_WITH_TORCH), kolo/torch.h through
#   find_package(kolo REQUIRED COMPONENTS torch)
#   target_link_libraries(app PRIVATE kolo::torch)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# check.h is for kolo's own sources (KOLO_CHECK); no installed header includes it.
# torch.h goes only with the library behind it.
set(_kolo_header_excludes PATTERN check.h EXCLUDE)
set(_kolo_installed_targets kolo kolo_runtime kolo_rendezvous kolo_ops kolo_models)
if(KOLO_WITH_TORCH)
  # kolo::torch, in an export file of its own: koloConfig reads it (and finds LibTorch)
  # only for find_package(kolo COMPONENTS torch).
  set_target_properties(kolo_torch PROPERTIES EXPORT_NAME torch)
  install(TARGETS kolo_torch EXPORT koloTorchTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT koloTorchTargets NAMESPACE kolo:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kolo)
else()
  list(APPEND _kolo_header_excludes PATTERN torch.h EXCLUDE)
endif()
install(DIRECTORY include/kolo DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} ${_kolo_header_excludes})
install(TARGETS ${_kolo_installed_targets}
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
  cmake/FindGloo.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kolo)
