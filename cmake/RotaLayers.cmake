# rota_layer(): one static library per layer whose include path admits only the layers it may use.
#
# Every header is included by its path from the repository root ("framework/nn/module.h"), but no
# target sees the repository root. Each layer gets an include view instead: a directory in the
# build tree holding symbolic links to that layer's own source folders only. A target's include
# path is its own view plus the views of the layers it links (CMake propagates them), so a
# wrong-way include (tensor including an nn header) finds no file and fails to compile, and a
# layer can only link the layers named in its DEPENDS. The table of layers is also written to
# ${CMAKE_BINARY_DIR}/layers.txt for tools/check_layering.py, which the test suite runs.

set(ROTA_VIEW_ROOT ${CMAKE_BINARY_DIR}/include_views)

# The include view of `name`: links view/<dir> -> <source>/<dir> for each of `dirs`.
function(rota_include_view name)
  set(view ${ROTA_VIEW_ROOT}/${name})
  foreach(dir ${ARGN})
    get_filename_component(parent ${view}/${dir} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    if(NOT EXISTS ${view}/${dir})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${dir} ${view}/${dir} SYMBOLIC)
    endif()
  endforeach()
endfunction()

# rota_layer(NAME DIRS dir... [DEPENDS layer...] [PUBLIC_LIBS lib...] [PRIVATE_LIBS lib...]
#            [EXCLUDE regex...])
# DEPENDS are other layers (the arrows of docs/architecture.md); *_LIBS are external libraries.
function(rota_layer name)
  cmake_parse_arguments(L "" "" "DIRS;DEPENDS;PUBLIC_LIBS;PRIVATE_LIBS;EXCLUDE" ${ARGN})
  set(sources "")
  foreach(dir ${L_DIRS})
    file(GLOB_RECURSE found CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.cpp)
    list(APPEND sources ${found})
  endforeach()
  foreach(pattern ${L_EXCLUDE})
    list(FILTER sources EXCLUDE REGEX "${pattern}")
  endforeach()
  rota_include_view(${name} ${L_DIRS})
  add_library(${name} STATIC ${sources})
  target_include_directories(${name} PUBLIC ${ROTA_VIEW_ROOT}/${name})
  target_link_libraries(${name} PUBLIC ${L_DEPENDS} ${L_PUBLIC_LIBS} PRIVATE ${L_PRIVATE_LIBS})
  string(REPLACE ";" "," dirs_text "${L_DIRS}")
  string(REPLACE ";" "," deps_text "${L_DEPENDS}")
  set_property(GLOBAL APPEND_STRING PROPERTY ROTA_LAYER_TABLE "${name} ${dirs_text} ${deps_text}\n")
endfunction()

# Writes the layer table (name, its folders, the layers it depends on) for the layering check.
function(rota_write_layer_table)
  get_property(table GLOBAL PROPERTY ROTA_LAYER_TABLE)
  file(WRITE ${CMAKE_BINARY_DIR}/layers.txt
       "# layer folders depends (written by cmake/RotaLayers.cmake)\n${table}")
endfunction()
