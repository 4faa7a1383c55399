# Read by CPack for each generator (CPACK_PROJECT_CONFIG_FILE): the .deb installs under /usr, the
# .tar.gz is the install tree itself (sigmatrace-VERSION-Linux/bin/sigmatrace, ...), to unpack
# anywhere: the tree is relocatable.
if(CPACK_GENERATOR STREQUAL "DEB")
  set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
else()
  set(CPACK_PACKAGING_INSTALL_PREFIX /)
endif()
