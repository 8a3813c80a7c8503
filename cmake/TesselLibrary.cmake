# libtessel.so: the one shared library users link. It contains the frontend, the backend and
# the runtime, with MLIR/LLVM linked statically and every symbol hidden except TESSEL_API
# (DESIGN.md §3, §8), so that it can live in a process that already has another LLVM.
set(_tessel_parts tessel_frontend TesselCompiler TesselRuntime)
set(_tessel_have TRUE)
foreach(p ${_tessel_parts})
  if(NOT TARGET ${p})
    set(_tessel_have FALSE)
    message(STATUS "tessel: ${p} not defined yet: libtessel.so skipped")
  endif()
endforeach()
if(_tessel_have)
  # The exported entry points (TESSEL_API) live in the frontend and the runtime: their objects
  # go in directly, so that --exclude-libs (which hides MLIR/LLVM) does not hide them.
  add_library(tessel SHARED ${TESSEL_SOURCE_DIR}/backend/lib/Pipelines/Jit.cpp
              $<TARGET_OBJECTS:tessel_frontend> $<TARGET_OBJECTS:TesselRuntime>)
  target_link_libraries(tessel PUBLIC tessel_dsl PRIVATE tessel_frontend TesselCompiler)
  target_include_directories(tessel PRIVATE ${TESSEL_SOURCE_DIR}/frontend/include)
  target_link_options(tessel PRIVATE -Wl,--exclude-libs,ALL -Wl,--gc-sections -Wl,-O1
)
  set_target_properties(tessel PROPERTIES CXX_VISIBILITY_PRESET hidden
                        VISIBILITY_INLINES_HIDDEN ON
                        LIBRARY_OUTPUT_DIRECTORY ${TESSEL_BINARY_DIR}/lib)
  add_library(tessel::tessel ALIAS tessel)
endif()
