# Shared build helpers for tessel.

# Internal static library that uses MLIR/LLVM headers. LLVM is built with RTTI (Debian) but
# without exceptions; tessel code keeps exceptions on, and never throws through MLIR frames.
function(tessel_mlir_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS;LINK" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} SYSTEM PUBLIC ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
  target_include_directories(${name} PUBLIC
    ${TESSEL_SOURCE_DIR}/backend/include ${TESSEL_BINARY_DIR}/backend/include
    ${TESSEL_SOURCE_DIR}/frontend/include)
  target_compile_definitions(${name} PUBLIC ${LLVM_DEFINITIONS})
  set_target_properties(${name} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  target_link_libraries(${name} PUBLIC ${ARG_LINK})
endfunction()
