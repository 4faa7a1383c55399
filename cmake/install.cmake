# `cmake --install BUILD --prefix P` and the packages (CPack: .deb and .tar.gz), following the GNU
# install directories. The tree is relocatable: the command finds its library, and softnic, relative
# to itself (src/cli), the report's script and style are inside the command, and the modulefile finds
# the prefix from its own place.
#   P/bin/sigmatrace                      the command
#   P/LIBDIR/libsigmatrace.so             the preload library (sigmatrace profile sets LD_PRELOAD to it)
#   P/include/sigmatrace.h                the public API (marks, docs/profiling.md)
#   P/share/sigmatrace/queries/*.sql      SQL for `sigmatrace sql` (docs/sql.md, the case studies')
#   P/share/doc/sigmatrace/               README and docs
#   P/share/man/man1/sigmatrace.1         the manual page, made from the command's own help
#   P/share/modulefiles/sigmatrace/VER    an environment-modules / Lmod modulefile
# Component softnic (not in the default install nor the main package): the emulated NIC, in
# P/LIBDIR/sigmatrace/softnic, never in the loader's default path, used by `profile --softnic`.
include(GNUInstallDirs)

install(TARGETS sigmatrace_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT sigmatrace)
install(TARGETS sigmatrace LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT sigmatrace)
install(FILES ${PROJECT_SOURCE_DIR}/include/sigmatrace.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT sigmatrace)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/queries/ ${PROJECT_SOURCE_DIR}/examples/nvshmem/queries/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/sigmatrace/queries COMPONENT sigmatrace FILES_MATCHING PATTERN "*.sql")
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT sigmatrace)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT sigmatrace)

# The manual page, from the built command's help (packaging/make_manpage.py).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  set(sigmatrace_manpage ${PROJECT_BINARY_DIR}/share/man/man1/sigmatrace.1)
  add_custom_command(OUTPUT ${sigmatrace_manpage}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/share/man/man1
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/packaging/make_manpage.py $<TARGET_FILE:sigmatrace_cli> ${sigmatrace_manpage}
    DEPENDS sigmatrace_cli ${PROJECT_SOURCE_DIR}/packaging/make_manpage.py VERBATIM)
  add_custom_target(sigmatrace_manpage ALL DEPENDS ${sigmatrace_manpage})
  install(FILES ${sigmatrace_manpage} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT sigmatrace)
endif()

# The modulefile: the prefix from the modulefile's own directory.
set(sigmatrace_modulefile_dir ${CMAKE_INSTALL_DATADIR}/modulefiles/sigmatrace)
file(RELATIVE_PATH SIGMATRACE_PREFIX_FROM_MODULEFILE ${CMAKE_INSTALL_PREFIX}/${sigmatrace_modulefile_dir} ${CMAKE_INSTALL_PREFIX})
set(SIGMATRACE_MODULEFILE_FROM_PREFIX ${sigmatrace_modulefile_dir})
configure_file(${PROJECT_SOURCE_DIR}/packaging/sigmatrace.modulefile.in ${PROJECT_BINARY_DIR}/share/modulefiles/sigmatrace/${PROJECT_VERSION} @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/share/modulefiles/sigmatrace/${PROJECT_VERSION} DESTINATION ${sigmatrace_modulefile_dir} COMPONENT sigmatrace)

if(TARGET softnic_ibverbs)
  foreach(t softnic_ibverbs softnic_mlx5 softnic_efa softnic_platform softnic_rdmacm)
    if(TARGET ${t})
      install(TARGETS ${t} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/sigmatrace/softnic COMPONENT softnic EXCLUDE_FROM_ALL)
    endif()
  endforeach()
endif()

# Packages: cpack -G DEB / -G TGZ in the build directory (the sigmatrace component; softnic is a
# package of its own: cpack -G DEB -D CPACK_COMPONENTS_ALL=softnic).
set(CPACK_PACKAGE_NAME sigmatrace)
set(CPACK_PACKAGE_VENDOR "sigmatrace")
set(CPACK_PACKAGE_CONTACT "sigmatrace developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "operation-level profiler for RDMA communication, GPU-initiated RDMA included")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_COMPONENTS_ALL sigmatrace)
set(CPACK_DEB_COMPONENT_INSTALL OFF)
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/packaging/cpack_options.cmake)  # /usr for the .deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)
include(CPack)
