# Build speed: a compiler cache shared by every clone and build directory, the mold linker, and
# the AUTO switches of optional parts (docs/testing.md "Build time" has the measurements).

# ROTA_CCACHE (AUTO, ON or OFF): compile through ccache when it is installed. The cache must not
# depend on where the tree is: CI builds a fresh clone in another folder right after a session
# built the same commit. So base_dir is the source tree (absolute paths under it are hashed as
# relative ones) and the working directory is not hashed; the tests find the source tree at run
# time (tests/support/source_tree.h), not through a compile definition holding its path.
# Debug info keeps the directory of whichever build compiled an object first.
set(ROTA_CCACHE AUTO CACHE STRING "Compile through ccache: AUTO (when installed), ON or OFF")
set_property(CACHE ROTA_CCACHE PROPERTY STRINGS AUTO ON OFF)
if(NOT ROTA_CCACHE STREQUAL "OFF" AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(ROTA_CCACHE_PROGRAM ccache)
  if(ROTA_CCACHE_PROGRAM)
    # pch_defines, time_macros: what ccache needs to cache compiles that use a precompiled
    # header (the test executables'); include_file_*: a fresh clone's headers are all new.
    set(CMAKE_CXX_COMPILER_LAUNCHER env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} CCACHE_NOHASHDIR=1
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      ${ROTA_CCACHE_PROGRAM})
    message(STATUS "rota: compiling through ${ROTA_CCACHE_PROGRAM}")
  elseif(ROTA_CCACHE STREQUAL "ON")
    message(FATAL_ERROR "ROTA_CCACHE is ON but ccache was not found (apt-get install ccache)")
  endif()
endif()

# ROTA_LINKER (AUTO, or a linker name for -fuse-ld=, or DEFAULT): mold when installed.
set(ROTA_LINKER AUTO CACHE STRING "Linker: AUTO (mold when installed), DEFAULT, or a -fuse-ld= name")
if(ROTA_LINKER STREQUAL "AUTO")
  find_program(ROTA_MOLD_PROGRAM mold)
  if(ROTA_MOLD_PROGRAM)
    add_link_options(-fuse-ld=mold)
    message(STATUS "rota: linking with ${ROTA_MOLD_PROGRAM}")
  endif()
elseif(NOT ROTA_LINKER STREQUAL "DEFAULT")
  add_link_options(-fuse-ld=${ROTA_LINKER})
endif()

# rota_resolve_auto(VAR package what apt_packages): VAR_RESOLVED is ON when VAR is ON, or AUTO and
# find_package(package CONFIG) succeeds; ON without the package is an error naming what to install.
function(rota_resolve_auto var package what apt_packages)
  set(resolved OFF)
  if(${var} STREQUAL "AUTO" OR ${var})
    find_package(${package} CONFIG QUIET)
    if(${package}_FOUND)
      set(resolved ON)
    elseif(${var} STREQUAL "AUTO")
      message(STATUS "rota: ${what} off (${var}=AUTO and ${package} not found: apt-get install ${apt_packages})")
    else()
      message(FATAL_ERROR "${var} is ON but ${package} was not found (apt-get install ${apt_packages})")
    endif()
  endif()
  set(${var}_RESOLVED ${resolved} PARENT_SCOPE)
endfunction()
