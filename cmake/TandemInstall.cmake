# What `make install PREFIX=...` (cmake --install build --prefix ...) puts where (docs/install.md):
#   include/tandem/            tandem.h, tandem.hpp, tandem_abi.h
#   lib/libtandem.so.<v>       the C API (versioned soname), and libtandem.a (every layer in one archive)
#   lib/libtandem_jpeg.so      the libjpeg preload library (docs/dropin.md)
#   lib/tandem-accumulate/     libaccumulate.so.1 twice: sw/ and tandem/ (and include/tandem-accumulate/)
#   lib/pkgconfig/tandem.pc, lib/cmake/tandem/   pkg-config and find_package(tandem)
#   bin/tandem, bin/tandemd
#   lib/systemd/user/tandemd.service, share/tandem/tandemd.toml   the daemon as a user service
# Every installed path is relative to the prefix chosen at install time (pkg-config's ${pcfiledir},
# CMake's CMAKE_CURRENT_LIST_DIR), so a tree installed anywhere works.
include(GNUInstallDirs)

# ---- libtandem.a: the client library and every static library below it, merged ----
# Walks the link graph from `target`: static libraries of this project go into the archive, the rest
# (system and imported libraries) become the link flags a static user needs (pkg-config Libs.private).
function(tandem_static_closure target archives_var flags_var)
  set(seen "")
  set(archives "")
  set(flags "")
  set(todo ${target})
  while(todo)
    list(POP_FRONT todo item)
    if(item MATCHES "^\\$<LINK_ONLY:(.*)>$")
      set(item ${CMAKE_MATCH_1})
    endif()
    if(item STREQUAL "" OR item MATCHES "^\\$<" OR item IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${item})
    if(TARGET ${item})
      get_target_property(imported ${item} IMPORTED)
      get_target_property(type ${item} TYPE)
      if(NOT imported AND type STREQUAL "STATIC_LIBRARY")
        list(APPEND archives ${item})
        get_target_property(deps ${item} LINK_LIBRARIES)
      elseif(NOT imported AND type STREQUAL "INTERFACE_LIBRARY")
        set(deps "")  # tandem_options: compile settings only
      elseif(imported AND NOT type STREQUAL "INTERFACE_LIBRARY")
        get_target_property(location ${item} IMPORTED_LOCATION)
        if(NOT location)
          get_target_property(configs ${item} IMPORTED_CONFIGURATIONS)
          list(GET configs 0 config)
          get_target_property(location ${item} IMPORTED_LOCATION_${config})
        endif()
        if(location)
          list(APPEND flags ${location})
        endif()
        get_target_property(deps ${item} INTERFACE_LINK_LIBRARIES)
      else()
        get_target_property(deps ${item} INTERFACE_LINK_LIBRARIES)
      endif()
      if(deps)
        list(APPEND todo ${deps})
      endif()
    elseif(item MATCHES "::")
      message(WARNING "libtandem.a: the imported target ${item} is not visible here; static users must add it")
    else()
      list(APPEND flags ${item})  # a flag (-pthread, -ldl) or a library file
    endif()
  endwhile()
  # Library files as -L<dir> -l<name> (the directory only when the linker would not search it anyway).
  set(out "")
  foreach(f IN LISTS flags)
    if(f MATCHES "^(.*)/lib([^/]+)\\.(so|a)(\\.[0-9.]+)?$")
      if(NOT CMAKE_MATCH_1 IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
        list(APPEND out "-L${CMAKE_MATCH_1}")
      endif()
      list(APPEND out "-l${CMAKE_MATCH_2}")
    elseif(f STREQUAL "Threads::Threads" OR f MATCHES "pthread")
      list(APPEND out "-pthread")
    else()
      list(APPEND out ${f})
    endif()
  endforeach()
  list(APPEND out -ldl -lm -lstdc++)
  list(REMOVE_DUPLICATES out)
  set(${archives_var} ${archives} PARENT_SCOPE)
  set(${flags_var} ${out} PARENT_SCOPE)
endfunction()

# Imported targets found in a subdirectory are visible only there: find them here too.
if(TARGET tandem_opencl)
  find_package(OpenCL QUIET)
endif()
tandem_static_closure(tandem_client _tandem_archives _tandem_static_flags)
set(_mri "CREATE ${PROJECT_BINARY_DIR}/lib/libtandem.a\n")
foreach(a IN LISTS _tandem_archives)
  string(APPEND _mri "ADDLIB $<TARGET_FILE:${a}>\n")
endforeach()
string(APPEND _mri "SAVE\nEND\n")
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/libtandem.mri CONTENT "${_mri}")
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/lib/libtandem.a
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/lib
  COMMAND ${CMAKE_COMMAND} -E remove -f ${PROJECT_BINARY_DIR}/lib/libtandem.a
  COMMAND ${CMAKE_AR} -M < ${PROJECT_BINARY_DIR}/libtandem.mri
  DEPENDS ${_tandem_archives} ${PROJECT_BINARY_DIR}/libtandem.mri
  COMMENT "Merging the static layers into lib/libtandem.a"
  VERBATIM)
add_custom_target(tandem_static_archive ALL DEPENDS ${PROJECT_BINARY_DIR}/lib/libtandem.a)

# ---- what goes where ----
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tandem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
install(TARGETS tandem_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_BINARY_DIR}/lib/libtandem.a DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS tandem tandemd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET tandem_jpeg)
  install(TARGETS tandem_jpeg LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
if(TARGET accumulate_sw AND TARGET accumulate_tandem)
  install(TARGETS accumulate_sw LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/tandem-accumulate/sw)
  install(TARGETS accumulate_tandem LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/tandem-accumulate/tandem)
  install(FILES ${PROJECT_SOURCE_DIR}/src/dropin/accumulate/accumulate.h
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tandem-accumulate)
endif()

# pkg-config: relative to the .pc file, so the prefix chosen at install time holds.
string(REPLACE ";" " " TANDEM_PC_LIBS_PRIVATE "${_tandem_static_flags}")
file(RELATIVE_PATH TANDEM_PC_PREFIX_FROM_PCDIR /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" TANDEM_PC_PREFIX_FROM_PCDIR "${TANDEM_PC_PREFIX_FROM_PCDIR}")
configure_file(${PROJECT_SOURCE_DIR}/packaging/tandem.pc.in ${PROJECT_BINARY_DIR}/packaging/tandem.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/tandem.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# find_package(tandem): tandem::tandem (libtandem.so) and tandem::tandem_static (libtandem.a).
include(CMakePackageConfigHelpers)
set(TANDEM_CMAKE_STATIC_LINK "${_tandem_static_flags}")
configure_package_config_file(${PROJECT_SOURCE_DIR}/packaging/tandemConfig.cmake.in
  ${PROJECT_BINARY_DIR}/packaging/tandemConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tandem
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/packaging/tandemConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/packaging/tandemConfig.cmake ${PROJECT_BINARY_DIR}/packaging/tandemConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tandem)

# The daemon as a systemd user service, with the prefix chosen at install time in ExecStart.
install(FILES ${PROJECT_SOURCE_DIR}/configs/default.toml DESTINATION ${CMAKE_INSTALL_DATADIR}/tandem RENAME tandemd.toml)
install(CODE "
  set(_bindir \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/packaging/tandemd.service.in\" \"${PROJECT_BINARY_DIR}/packaging/tandemd.service\" @ONLY)
  file(INSTALL \"${PROJECT_BINARY_DIR}/packaging/tandemd.service\"
       DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/systemd/user\")
")
