// Writes the per-event tables of trace.sqlite (op_row, completion_row) as SQLite table B-trees
// directly in SQLite's file format, instead of one INSERT per row. An INSERT costs about 2 µs here
// (1.4 µs even batched in multi-row statements: SQLite's virtual machine, not the disk), which alone
// held the analysis under 1 M events/s per core; encoding a record and packing it into a page costs
// about 0.2 µs with the page's write, and each worker writes its own pages without a lock.
//
// The format (sqlite.org/fileformat2.html): a rowid table is a B+tree whose leaf pages (type 13)
// hold cells `varint payload size, varint rowid, record`, in rowid order, and whose interior pages
// (type 5) hold `4-byte child page, varint largest rowid in that child` plus a right-most child.
// Leaves have no sibling pointers, so a leaf's page number only matters to its parent: workers
// write their leaves in any order into the file that becomes the database, after room kept for
// SQLite's own pages (schema and small tables, built in a file beside it). At the end those pages
// are copied into the room, the rest of the room goes on the freelist, and the interior pages are
// written above the leaves, the top one in the table's root page (assemble_in_place). When SQLite
// needed more than the room, the leaves are copied after its pages instead (append_table_btree).
//
// Rows arrive nearly sorted (a WR is emitted when its completion is seen); each writer sorts them
// in a window. A row whose rowid falls below one already written is handed back, for an ordinary
// INSERT after the tree is built (SQLite then places it like any other row).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "export/file_io.h"

namespace sigmatrace::exporter {

// One row's values, in column order; a NULL is a bit in null_mask. Columns are integers (the
// per-event tables hold no text).
struct SqlRow {
  static constexpr unsigned kMaxColumns = 32;
  int64_t value[kMaxColumns];
  uint32_t null_mask = 0;
  unsigned count = 0;
  SqlRow& i(int64_t v) { value[count++] = v; return *this; }
  SqlRow& u(uint64_t v) { return i(static_cast<int64_t>(v)); }
  SqlRow& null() { null_mask |= 1u << count; value[count++] = 0; return *this; }
  SqlRow& id(int64_t v) { return v < 0 ? null() : i(v); }  // -1 in an id column means NULL
  bool is_null(unsigned c) const { return (null_mask >> c) & 1; }
};

// Appends the record of `row` (column 0 is the INTEGER PRIMARY KEY, stored as NULL: the rowid
// holds it) to out; the record's length. With `defaults` (the table's column DEFAULTs, NULL where
// a column has none), the record ends before its trailing columns that equal their defaults:
// SQLite reads a column missing from a record as its default (as after ALTER TABLE ADD COLUMN).
size_t encode_sqlite_record(const SqlRow& row, std::vector<uint8_t>* out, const SqlRow* defaults = nullptr);
// The same into out, which has room for kMaxRecordBytes (8 bytes of it scratch past the record).
constexpr size_t kMaxRecordBytes = 1 + SqlRow::kMaxColumns + 8 * SqlRow::kMaxColumns + 8;
size_t encode_sqlite_record(const SqlRow& row, uint8_t* out, const SqlRow* defaults = nullptr);

// A leaf page written by a SortedLeafWriter: its slot in the file and the rowids it holds.
struct LeafPage {
  uint64_t slot;
  int64_t first_rowid, last_rowid;
};

// The file the workers' leaves go to, thread-safe (slots are taken atomically, written with
// pwrite). Slot k is page first_page + k of a database (the locking page stepped over): with
// first_page above the pages SQLite needs, the file becomes the database itself
// (assemble_in_place); with 1 it is scratch, copied from (append_table_btree).
class LeafScratchFile {
 public:
  ~LeafScratchFile();
  bool open(const std::string& path, uint32_t page_size, std::string* error, uint32_t first_page = 1);
  uint32_t page_size() const { return page_size_; }
  uint32_t first_page() const { return first_page_; }
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  uint64_t slots() const { return next_slot_.load(); }
  uint32_t page_of(uint64_t slot) const;
  uint64_t offset(uint64_t slot) const { return uint64_t{page_of(slot) - 1} * page_size_; }
  bool write(const uint8_t* page, uint64_t* slot);
  int write_errno() const { return write_errno_.load(); }  // of the first failed write, 0 if none
  void remove();   // closes and deletes the file
  void release();  // closes it and keeps it: it is the database now

 private:
  void close_files();
  int fd_ = -1;
  int direct_fd_ = -1;  // the same file opened O_DIRECT for the leaves (-1: not supported there)
  std::string path_;
  uint32_t page_size_ = 0, first_page_ = 1;
  std::atomic<uint64_t> next_slot_{0};
  std::atomic<int> write_errno_{0};
};

// The page SQLite leaves unused: the one holding the byte at 1 GiB.
uint32_t lock_byte_page(uint32_t page_size);

// One table's rows from one trace file: puts them in rowid order within a window and packs them
// into leaf pages. Rows are placed in a ring indexed by rowid (ids are dense or nearly so: op ids
// are process_id << 40 | n), so ordering costs no sort; a row whose rowid falls below the ring
// (window_ids, rounded up to a power of two, below the highest seen) is handed back.
class SortedLeafWriter {
 public:
  // defaults: as for encode_sqlite_record (null: every column is stored).
  SortedLeafWriter(LeafScratchFile* scratch, size_t window_ids, const SqlRow* defaults = nullptr);
  // False when the row came too late for the pages already written: the caller INSERTs it later.
  bool add(const SqlRow& row);
  // A row already encoded, in rowid order (rows read from another database, e.g. a shard's); not
  // mixed with add(). False when its rowid is not above the last one, or a page write failed.
  bool add_sorted(int64_t rowid, const uint8_t* record, uint32_t size);
  // Writes what is left; false on a write error (then the table cannot be assembled).
  bool finish();
  const std::vector<LeafPage>& pages() const { return pages_; }

 private:
  struct Slot {
    int64_t rowid;
    uint32_t offset, size;  // in records_; size 0: empty
  };
  void write_below(int64_t end);  // writes the ring's rows with rowid < end, in order
  void compact();                 // drops the records already written from records_
  void append_cell(int64_t rowid, const uint8_t* record, uint32_t size);
  bool flush_page();

  LeafScratchFile* scratch_;
  const SqlRow* defaults_;
  std::vector<Slot> ring_;  // a power of two long; rowid r sits at r & mask_
  uint64_t mask_ = 0;
  int64_t base_ = 0, high_ = 0;  // rows below base_ are written; high_: the highest rowid in the ring + 1
  bool started_ = false;
  std::unique_ptr<uint8_t[]> records_;  // the ring's rows' records, and written ones until compact()
  size_t records_size_ = 0, records_capacity_ = 0;
  size_t live_bytes_ = 0;  // of records_, those of rows still in the ring
  bool have_written_ = false, failed_ = false;
  int64_t last_written_ = 0;
  AlignedBytes page_;  // aligned for O_DIRECT
  uint32_t cells_ = 0, content_start_ = 0;
  int64_t page_first_ = 0, page_last_ = 0;
  std::vector<LeafPage> pages_;
};

// Appends a table's leaves (from every writer, in any order) to the database file `db_path` after
// its last page and writes the interior pages above them, the top one into root_page, which SQLite
// made as the table's (empty) root. The file must not be open in SQLite meanwhile. False with
// *error when the file is not one this can extend (page size, format) or the leaves overlap.
bool append_table_btree(const std::string& db_path, uint32_t root_page, const LeafScratchFile& scratch,
                        std::vector<LeafPage> leaves, std::string* error);

// A table whose leaves are in the scratch file, and its root page in SQLite's database.
struct ScratchTable {
  uint32_t root_page;
  std::vector<LeafPage> leaves;
};

// Makes the scratch file the database, without copying the leaves: SQLite's pages (fewer than
// the scratch's first_page) are copied in front of them, the pages between go on the freelist, and
// each table's interior pages are appended, its top one at its root page.
bool assemble_in_place(const std::string& sqlite_path, const LeafScratchFile& scratch, std::vector<ScratchTable> tables,
                       std::string* error);

}  // namespace sigmatrace::exporter
