# Run at every build (cmake -DSOURCE_DIR=... -DOUTPUT=... -P revision.cmake): writes OUTPUT, a header
# defining SIGMATRACE_REVISION as `git describe --always --dirty` of SOURCE_DIR ("unknown" outside a
# git checkout), rewritten only when it changed so that nothing rebuilds for nothing.
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR revision STREQUAL "")
  set(revision "unknown")
endif()
set(text "#define SIGMATRACE_REVISION \"${revision}\"\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
