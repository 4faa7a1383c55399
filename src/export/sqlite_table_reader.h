// Reads a rowid table's rows straight from an SQLite database file, in rowid order, each as its
// rowid and its record (the bytes SQLite stores, as encode_sqlite_record makes them): how merging
// shards (shard_merge.h) moves hundreds of millions of per-event rows from the shards' trace.sqlite
// into the merged one without decoding a value, at the cost of a copy. Walks the table's B-tree
// from its root page (sqlite.org/fileformat2.html, "B-tree Pages"); rows with overflow pages, which
// the per-event tables never have, are refused rather than read wrong.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace sigmatrace::exporter {

// Calls row() for every row of the table rooted at root_page; false with *error (one line) when
// the file is not an SQLite database, a page is not part of a table B-tree, a row has overflow
// pages, or row() returned false (then *error is left as row() set it).
using TableRowVisitor = std::function<bool(int64_t rowid, const uint8_t* record, uint32_t size)>;
bool read_table_rows(const std::string& db_path, uint32_t root_page, const TableRowVisitor& row, std::string* error);

}  // namespace sigmatrace::exporter
