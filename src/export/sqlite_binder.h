// Binding a prepared statement's parameters in order, for the writers of trace.sqlite's tables.
#pragma once
#include "export/sqlite_api.h"

#include <cstdint>
#include <string>

#include "export/sqlite_btree.h"

namespace sigmatrace::exporter {

// Binds a statement's parameters in order; -1 in an id column means NULL.
class Binder {
 public:
  explicit Binder(sqlite3_stmt* s) : s_(s) { sqlite3_reset(s_); }
  Binder& i(int64_t v) { sqlite3_bind_int64(s_, ++n_, v); return *this; }
  Binder& id(int64_t v) { if (v < 0) sqlite3_bind_null(s_, ++n_); else sqlite3_bind_int64(s_, ++n_, v); return *this; }
  Binder& u(uint64_t v) { sqlite3_bind_int64(s_, ++n_, static_cast<int64_t>(v)); return *this; }
  Binder& d(double v) { sqlite3_bind_double(s_, ++n_, v); return *this; }
  Binder& t(const std::string& v) { sqlite3_bind_text(s_, ++n_, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); return *this; }
  Binder& t(const char* v) { sqlite3_bind_text(s_, ++n_, v, -1, SQLITE_STATIC); return *this; }
  Binder& null() { sqlite3_bind_null(s_, ++n_); return *this; }
  Binder& row(const SqlRow& r) {
    for (unsigned c = 0; c < r.count; ++c) r.is_null(c) ? null() : i(r.value[c]);
    return *this;
  }
  bool step() { return sqlite3_step(s_) == SQLITE_DONE; }

 private:
  sqlite3_stmt* s_;
  int n_ = 0;
};

}  // namespace sigmatrace::exporter
