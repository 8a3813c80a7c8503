# ctest package.add_subdirectory (see CMakeLists.txt): configures superproject/, which
# add_subdirectory()s tessel and checks the targets it gets (configure only: building would
# compile tessel a second time). Inputs: TESSEL_SOURCE_DIR, SUPERPROJECT_DIR, WORK_DIR,
# GENERATOR, CXX_COMPILER, C_COMPILER.
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SUPERPROJECT_DIR} -B ${WORK_DIR} -G ${GENERATOR}
                        -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_C_COMPILER=${C_COMPILER}
                        -DTESSEL_SOURCE_DIR=${TESSEL_SOURCE_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring a project that add_subdirectory()s tessel failed:\n${out}")
endif()
string(REGEX MATCH "superproject: [^\n]*" line "${out}")
message(STATUS "${line}")
file(REMOVE_RECURSE ${WORK_DIR})
