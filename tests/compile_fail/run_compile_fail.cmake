# Compiles SOURCE with COMPILER and FLAGS ('|'-separated) and succeeds iff the compilation fails
# with diagnostics that contain the text after "// expect: " on the first line of SOURCE.
# A first line "// expect-compiles" inverts the test (the control case: the flags and include
# directories are right, so the other cases fail for the reason they name); a control case must
# also compile without any warning of -Wall -Wextra (-Werror: a user's warning flags meet the
# DSL headers, included with -I as the examples include them).
#   cmake -DCOMPILER=g++ -DFLAGS="-std=c++20|-Idsl/include" -DSOURCE=case.cpp -P run_compile_fail.cmake
foreach(var COMPILER FLAGS SOURCE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_compile_fail.cmake: ${var} is not set")
  endif()
endforeach()

file(READ "${SOURCE}" text LIMIT 4096)
string(FIND "${text}" "\n" eol)
string(SUBSTRING "${text}" 0 ${eol} first_line)
string(REPLACE "|" ";" flag_list "${FLAGS}")
set(ENV{LC_ALL} C)

if(first_line STREQUAL "// expect-compiles")
  execute_process(COMMAND ${COMPILER} ${flag_list} -Wall -Wextra -Werror -fdiagnostics-color=never "${SOURCE}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${SOURCE} must compile, but:\n${err}")
  endif()
  return()
endif()

set(prefix "// expect: ")
string(LENGTH "${prefix}" prefix_length)
string(SUBSTRING "${first_line}" 0 ${prefix_length} head)
if(NOT head STREQUAL prefix)
  message(FATAL_ERROR "${SOURCE}: the first line must be '${prefix}<expected diagnostic text>'")
endif()
string(SUBSTRING "${first_line}" ${prefix_length} -1 expected)
string(STRIP "${expected}" expected)

execute_process(COMMAND ${COMPILER} ${flag_list} -fdiagnostics-color=never "${SOURCE}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it must not (expected: ${expected})")
endif()
string(FIND "${out}${err}" "${expected}" found)
if(found EQUAL -1)
  string(SUBSTRING "${err}" 0 3000 head_of_err)
  message(FATAL_ERROR "${SOURCE} failed to compile, but without the expected text\n"
                      "  expected: ${expected}\n  diagnostics:\n${head_of_err}")
endif()
message(STATUS "${SOURCE}: fails to compile with '${expected}'")
