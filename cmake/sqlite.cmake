# trace.sqlite and `sigmatrace sql` need only SQLite's runtime library: the C API they call is
# declared in src/export/sqlite_api.h, so a machine with libsqlite3.so.0 but without libsqlite3-dev
# (the GPU machines) builds them too. Sets SQLite3_FOUND and the target SQLite::SQLite3 (the
# library alone); SIGMATRACE_SQLITE_HEADER is sqlite3.h's directory where it is installed (the test
# that holds sqlite_api.h's declarations against it).
find_library(SIGMATRACE_SQLITE_LIBRARY NAMES sqlite3 libsqlite3.so.0)
find_path(SIGMATRACE_SQLITE_HEADER sqlite3.h)
if(SIGMATRACE_SQLITE_LIBRARY)
  set(SQLite3_FOUND TRUE)
  if(NOT TARGET SQLite::SQLite3)
    add_library(SQLite::SQLite3 UNKNOWN IMPORTED)
    set_target_properties(SQLite::SQLite3 PROPERTIES IMPORTED_LOCATION "${SIGMATRACE_SQLITE_LIBRARY}")
  endif()
  message(STATUS "sigmatrace: SQLite: ${SIGMATRACE_SQLITE_LIBRARY}")
else()
  set(SQLite3_FOUND FALSE)
endif()
