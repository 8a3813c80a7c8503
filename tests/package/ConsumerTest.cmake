# ctest package.consumer (see CMakeLists.txt). Inputs: TESSEL_BUILD_DIR, CONSUMER_SOURCE_DIR,
# WORK_DIR, GENERATOR, CXX_COMPILER, WITH_EXAMPLES (1 when the build has the examples).
cmake_minimum_required(VERSION 3.25)
# The prefix is a fresh temporary folder outside the build tree (a second libtessel.so in the
# build tree could be taken for the build's own, e.g. by scripts/gpu-bundle).
set(tmp $ENV{TMPDIR})
if(NOT tmp)
  set(tmp /tmp)
endif()
string(RANDOM LENGTH 10 suffix)
set(prefix ${tmp}/tessel-package-test-${suffix})
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(fail message)
  file(REMOVE_RECURSE ${prefix})
  message(FATAL_ERROR "${message}")
endfunction()
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    fail("${what} failed (${rc}):\n${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# 1. Install into a fresh prefix.
run("cmake --install" ${CMAKE_COMMAND} --install ${TESSEL_BUILD_DIR} --prefix ${prefix})
foreach(f lib/libtessel.so include/tessel/tessel.hpp include/tessel/kernel/runtime_api.hpp
          lib/cmake/tessel/tesselConfig.cmake lib/cmake/tessel/tesselConfigVersion.cmake
          lib/cmake/tessel/tesselTargets.cmake bin/tessel-cache bin/tessel-compile bin/tessel-opt)
  if(NOT EXISTS ${prefix}/${f})
    fail("the install has no ${f}")
  endif()
endforeach()
# The headers are the DSL's only: no MLIR, LLVM or CUDA header is installed or included.
file(GLOB_RECURSE headers RELATIVE ${prefix}/include ${prefix}/include/*)
foreach(h ${headers})
  if(NOT h MATCHES "^tessel/.*\\.hpp$")
    fail("unexpected installed header: include/${h}")
  endif()
  file(STRINGS ${prefix}/include/${h} bad REGEX "#include [<\"](mlir|llvm|cuda)")
  if(bad)
    fail("include/${h} includes ${bad}")
  endif()
endforeach()
list(LENGTH headers nheaders)
message(STATUS "installed libtessel.so, ${nheaders} headers and the CMake package into ${prefix}")

# 2. Configure the consumer against the prefix only: MLIR and LLVM may not be found.
run("configuring the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${build} -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON)
file(STRINGS ${build}/CMakeCache.txt found REGEX "^tessel_DIR:")
if(NOT found STREQUAL "tessel_DIR:PATH=${prefix}/lib/cmake/tessel")
  fail("the consumer found tessel elsewhere: ${found}")
endif()
run("building the consumer" ${CMAKE_COMMAND} --build ${build})

# 3. Run it twice with its own cache: the second run takes the kernel from the disk cache.
set(ENV{TESSEL_CACHE_DIR} ${WORK_DIR}/cache)
set(ENV{TESSEL_VERBOSE} 1)
unset(ENV{TESSEL_DISABLE_CACHE})
run("running the consumer" ${build}/tessel-consumer)
message(STATUS "first run:\n${out}")
if(NOT out MATCHES "tessel-consumer: jitted 'axpy': [0-9]+ bytes of PTX" OR NOT out MATCHES "tessel: compiled 'axpy'")
  fail("unexpected output of the first run")
endif()
run("running the consumer again" ${build}/tessel-consumer)
message(STATUS "second run:\n${out}")
if(NOT out MATCHES "tessel: 'axpy' from the disk cache" OR out MATCHES "tessel: compiled")
  fail("the second run did not take the kernel from the disk cache")
endif()

# 4. Installed binaries start (RPATH $ORIGIN/../lib): an example compiles its kernel, and
#    tessel-cache lists the consumer's entry.
unset(ENV{TESSEL_VERBOSE})
if(WITH_EXAMPLES)
  run("the installed tessel-vector-add" ${prefix}/bin/tessel-vector-add --no-run --dump-dir ${WORK_DIR}/dump)
  # Its dump replays with the installed tools: 01 compiles again to the same PTX.
  run("the installed tessel-compile" ${prefix}/bin/tessel-compile ${WORK_DIR}/dump/01-tessel.mlir
      --dump-dir ${WORK_DIR}/again)
  file(READ ${WORK_DIR}/dump/14-kernel.ptx ptx_dumped)
  file(READ ${WORK_DIR}/again/14-kernel.ptx ptx_again)
  if(NOT ptx_dumped STREQUAL ptx_again)
    fail("the installed tessel-compile does not reproduce the dump's PTX")
  endif()
  run("the installed tessel-opt" ${prefix}/bin/tessel-opt ${WORK_DIR}/dump/09-lower-to-nvvm.mlir
      --tessel-hopper-to-nvvm-pipeline)
endif()
run("the installed tessel-cache" ${prefix}/bin/tessel-cache list)
if(NOT out MATCHES "axpy")
  fail("tessel-cache list does not show the consumer's kernel:\n${out}")
endif()
message(STATUS "tessel-cache list:\n${out}")
file(REMOVE_RECURSE ${prefix})
