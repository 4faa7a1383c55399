// See sqlite_btree.h.
#include "export/sqlite_btree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <cstring>

#include "export/sqlite_bytes.h"

namespace sigmatrace::exporter {

using namespace sqlite_format;

namespace {

constexpr uint64_t kLockByteOffset = 0x40000000;

// A page's "start of the cell content area": 0 stands for 65536.
uint32_t content_field(uint32_t start) { return start == 65536 ? 0 : start; }

// A child of an interior page: its page number and the largest rowid below it.
struct Child {
  uint32_t page;
  int64_t last_rowid;
};

size_t interior_cell_size(const Child& c) { return 2 + 4 + varint_size(static_cast<uint64_t>(c.last_rowid)); }

// Writes children [begin, end) as one interior page: cells for all but the last, which is the
// right-most pointer.
void build_interior(const Child* begin, const Child* end, uint32_t page_size, std::vector<uint8_t>* page) {
  page->assign(page_size, 0);
  uint8_t* p = page->data();
  uint32_t content = page_size, cells = 0;
  for (const Child* c = begin; c + 1 < end; ++c, ++cells) {
    uint8_t cell[13];
    put32(cell, c->page);
    size_t n = 4 + put_varint(cell + 4, static_cast<uint64_t>(c->last_rowid));
    content -= static_cast<uint32_t>(n);
    std::memcpy(p + content, cell, n);
    put16(p + kInteriorHeader + 2 * cells, content);
  }
  p[0] = kInteriorTablePage;
  put16(p + 3, cells);
  put16(p + 5, content_field(content));
  put32(p + 8, (end - 1)->page);
}

}  // namespace

namespace {
bool is_default(const SqlRow& row, const SqlRow& defaults, unsigned c) {
  return row.is_null(c) ? defaults.is_null(c) : !defaults.is_null(c) && row.value[c] == defaults.value[c];
}
}  // namespace

size_t encode_sqlite_record(const SqlRow& row, uint8_t* out, const SqlRow* defaults) {
  // Header: its own size, then a serial type per column (all under 128, so a byte each); body:
  // each integer big-endian in the fewest bytes its serial type allows (0 and 1 take none).
  // Serial type and length by the bytes a two's-complement value needs (1..8; 5 and 7 round up).
  static constexpr uint8_t kType[9] = {0, 1, 2, 3, 4, 5, 5, 6, 6}, kLength[9] = {0, 1, 2, 3, 4, 6, 6, 8, 8};
  unsigned count = row.count;
  if (defaults)
    while (count > 1 && count <= defaults->count && is_default(row, *defaults, count - 1)) --count;
  const size_t h = 1 + count;
  uint8_t* header = out;
  uint8_t* body = out + h;
  size_t b = 0;
  header[0] = static_cast<uint8_t>(h);
  header[1] = 0;  // column 0: the rowid alias
  for (unsigned c = 1; c < count; ++c) {
    const int64_t v = row.value[c];
    if (row.is_null(c)) {
      header[1 + c] = 0;
      continue;
    }
    if (static_cast<uint64_t>(v) <= 1) {
      header[1 + c] = static_cast<uint8_t>(8 + v);
      continue;
    }
    const uint64_t magnitude = static_cast<uint64_t>(v ^ (v >> 63));  // the bits besides the sign
    const unsigned need = (64 - static_cast<unsigned>(__builtin_clzll(magnitude | 1)) + 1 + 7) / 8;
    const unsigned bytes = kLength[need];
    header[1 + c] = kType[need];
    // The value's low `bytes` bytes, big-endian: one 8-byte store, the rest overwritten after.
    const uint64_t be = __builtin_bswap64(static_cast<uint64_t>(v) << (8 * (8 - bytes)));
    std::memcpy(body + b, &be, 8);
    b += bytes;
  }
  return h + b;
}

size_t encode_sqlite_record(const SqlRow& row, std::vector<uint8_t>* out, const SqlRow* defaults) {
  const size_t at = out->size();
  out->resize(at + kMaxRecordBytes);
  const size_t n = encode_sqlite_record(row, out->data() + at, defaults);
  out->resize(at + n);
  return n;
}

LeafScratchFile::~LeafScratchFile() { close_files(); }

void LeafScratchFile::close_files() {
  if (fd_ >= 0) ::close(fd_), fd_ = -1;
  if (direct_fd_ >= 0) ::close(direct_fd_), direct_fd_ = -1;
}

bool LeafScratchFile::open(const std::string& path, uint32_t page_size, std::string* error, uint32_t first_page) {
  path_ = path;
  page_size_ = page_size;
  first_page_ = first_page;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    *error = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  // The leaves are written once and not read again here: past the page cache, they cost the
  // kernel no copy and no reclaim (a tenth of the CPU at 384 M events). Where the file system
  // refuses O_DIRECT (tmpfs), through the cache.
  if (page_size % kDirectIoAlignment == 0) direct_fd_ = ::open(path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  return true;
}

bool LeafScratchFile::write(const uint8_t* page, uint64_t* slot) {
  *slot = next_slot_.fetch_add(1, std::memory_order_relaxed);
  if (direct_fd_ >= 0 && reinterpret_cast<uintptr_t>(page) % kDirectIoAlignment == 0 &&
      pwrite_all(direct_fd_, page, page_size_, offset(*slot)))
    return true;
  if (pwrite_all(fd_, page, page_size_, offset(*slot))) return true;
  keep_first_errno(&write_errno_);
  return false;
}

uint32_t LeafScratchFile::page_of(uint64_t slot) const {
  uint64_t page = first_page_ + slot;
  if (page >= lock_byte_page(page_size_)) ++page;  // the slots step over SQLite's locking page
  return static_cast<uint32_t>(page);
}

void LeafScratchFile::remove() {
  close_files();
  if (!path_.empty()) ::unlink(path_.c_str());
  path_.clear();
}

void LeafScratchFile::release() {
  close_files();
  path_.clear();
}

SortedLeafWriter::SortedLeafWriter(LeafScratchFile* scratch, size_t window_ids, const SqlRow* defaults)
    : scratch_(scratch), defaults_(defaults), content_start_(scratch->page_size()) {
  page_ = aligned_bytes(scratch->page_size());  // the tests' pages can be 512 bytes: rounded up
  std::memset(page_.get(), 0, scratch->page_size());
  if (window_ids) {
    size_t n = 2;
    while (n < window_ids) n *= 2;
    ring_.assign(n, Slot{0, 0, 0});
    mask_ = n - 1;
  }
}

bool SortedLeafWriter::add(const SqlRow& row) {
  const int64_t rowid = row.value[0];
  const int64_t span = static_cast<int64_t>(ring_.size());
  if (!started_) {
    // Rows of ids a little below the first one may still come: the ring starts half below it.
    started_ = true;
    base_ = rowid - span / 2, high_ = rowid;
  }
  if (rowid < base_) return false;
  if (rowid >= base_ + span) write_below(rowid - span + 1);
  Slot& s = ring_[static_cast<uint64_t>(rowid) & mask_];
  if (s.size) return false;  // the same id twice: the second goes through SQLite, which will say so
  if (records_size_ + kMaxRecordBytes > records_capacity_) compact();
  const size_t at = records_size_;
  const uint32_t size = static_cast<uint32_t>(encode_sqlite_record(row, records_.get() + at, defaults_));
  records_size_ += size;
  s = {rowid, static_cast<uint32_t>(at), size};
  live_bytes_ += size;
  high_ = std::max(high_, rowid + 1);
  return true;
}

bool SortedLeafWriter::add_sorted(int64_t rowid, const uint8_t* record, uint32_t size) {
  if (have_written_ && rowid <= last_written_) return false;
  append_cell(rowid, record, size);
  have_written_ = true, last_written_ = rowid;
  return !failed_;
}

void SortedLeafWriter::write_below(int64_t end) {
  // Past the ring's highest row nothing is left: the rest of the way is skipped, not scanned.
  const int64_t stop = std::min(end, high_);
  for (; base_ < stop; ++base_) {
    Slot& s = ring_[static_cast<uint64_t>(base_) & mask_];
    if (!s.size) continue;
    append_cell(s.rowid, records_.get() + s.offset, s.size);
    have_written_ = true, last_written_ = s.rowid;
    live_bytes_ -= s.size;
    s.size = 0;
  }
  base_ = std::max(base_, end);
}

void SortedLeafWriter::compact() {
  // The records of rows still in the ring move to a fresh buffer, with as much room again for
  // new ones (so that compacting, which visits every slot of the ring, stays rare).
  const size_t capacity = 2 * live_bytes_ + std::max<size_t>(size_t{4} << 20, 64 * ring_.size());
  auto fresh = std::make_unique_for_overwrite<uint8_t[]>(capacity);
  size_t size = 0;
  for (int64_t id = base_; id < high_; ++id) {
    Slot& s = ring_[static_cast<uint64_t>(id) & mask_];
    if (!s.size) continue;
    std::memcpy(fresh.get() + size, records_.get() + s.offset, s.size);
    s.offset = static_cast<uint32_t>(size);
    size += s.size;
  }
  records_ = std::move(fresh);
  records_size_ = size, records_capacity_ = capacity;
}

void SortedLeafWriter::append_cell(int64_t rowid, const uint8_t* record, uint32_t size) {
  uint8_t prefix[18];
  size_t pre = put_varint(prefix, size);
  pre += put_varint(prefix + pre, static_cast<uint64_t>(rowid));
  // SQLite counts a cell as at least 4 bytes; every per-event record is longer than that.
  uint32_t cell = static_cast<uint32_t>(std::max<size_t>(4, pre + size));
  if (kLeafHeader + 2 * (cells_ + 1) + cell > content_start_ && cells_ && !flush_page()) return;
  content_start_ -= cell;
  uint8_t* p = page_.get() + content_start_;
  std::memcpy(p, prefix, pre);
  std::memcpy(p + pre, record, size);
  put16(page_.get() + kLeafHeader + 2 * cells_, content_start_);
  if (!cells_) page_first_ = rowid;
  page_last_ = rowid;
  ++cells_;
}

bool SortedLeafWriter::flush_page() {
  uint8_t* p = page_.get();
  p[0] = kLeafTablePage;
  put16(p + 3, cells_);
  put16(p + 5, content_field(content_start_));
  uint32_t gap = kLeafHeader + 2 * cells_;
  std::memset(p + gap, 0, content_start_ - gap);  // unused space: zeros, not the previous page's cells
  uint64_t slot = 0;
  if (!scratch_->write(p, &slot)) {
    failed_ = true;
  } else {
    pages_.push_back({slot, page_first_, page_last_});
  }
  cells_ = 0;
  content_start_ = scratch_->page_size();
  return !failed_;
}

bool SortedLeafWriter::finish() {
  if (started_) write_below(high_);
  if (cells_) flush_page();
  return !failed_;
}

namespace {

// A database file being extended past what SQLite wrote: its header, its pages, the next free
// page number.
class DatabasePages {
 public:
  ~DatabasePages() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool open(const std::string& path, uint32_t expected_page_size, std::string* error) {
    path_ = path, error_ = error;
    fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) return fail(std::string("cannot open it: ") + std::strerror(errno));
    if (!pread_all(fd_, header_, sizeof header_, 0)) return fail("cannot read its header");
    page_size_ = get16(header_ + 16) == 1 ? 65536 : get16(header_ + 16);
    if (page_size_ != expected_page_size || header_[20] != 0) return fail("page size or reserved space differs from the rows' pages");
    if (get32(header_ + 44) != 4) return fail("schema format is not 4 (integers 0 and 1 need no body only from format 4)");
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return fail("cannot stat it");
    page_count_ = static_cast<uint32_t>(static_cast<uint64_t>(st.st_size) / page_size_);
    if (get32(header_ + 92) == get32(header_ + 24) && get32(header_ + 28)) page_count_ = get32(header_ + 28);
    page_.resize(page_size_);
    return true;
  }
  bool fail(const std::string& what) {
    *error_ = path_ + ": " + what;
    return false;
  }
  int fd() const { return fd_; }
  uint32_t page_size() const { return page_size_; }
  uint32_t page_count() const { return page_count_; }
  void set_page_count(uint32_t n) { page_count_ = n; }
  std::vector<uint8_t>& buffer() { return page_; }
  bool write(uint32_t pgno, const uint8_t* p) { return pwrite_all(fd_, p, page_size_, uint64_t{pgno - 1} * page_size_); }
  // SQLite never uses the page holding the byte at 1 GiB (its file-locking byte).
  uint32_t next() {
    if (++page_count_ == lock_byte_page(page_size_)) ++page_count_;
    return page_count_;
  }

  // Interior levels above `level` (two or more children), bottom up, until one page holds every
  // child: that one is written at root_page.
  bool build_interior_levels(std::vector<Child> level, uint32_t root_page) {
    for (;;) {
      size_t all = kInteriorHeader;
      for (size_t i = 0; i + 1 < level.size(); ++i) all += interior_cell_size(level[i]);
      if (all <= page_size_) {
        build_interior(level.data(), level.data() + level.size(), page_size_, &page_);
        return write(root_page, page_.data()) || fail("cannot write a root page");
      }
      // Pack children greedily; a page needs at least two, so the last may take one from the one before.
      std::vector<size_t> starts{0};
      size_t used = kInteriorHeader;
      for (size_t i = 0; i < level.size(); ++i) {
        size_t cost = interior_cell_size(level[i]);  // as if child i were not the right-most one
        if (i > starts.back() && used + cost > page_size_) starts.push_back(i), used = kInteriorHeader;
        used += cost;
      }
      if (level.size() - starts.back() == 1) --starts.back();
      std::vector<Child> up;
      for (size_t k = 0; k < starts.size(); ++k) {
        size_t end = k + 1 < starts.size() ? starts[k + 1] : level.size();
        build_interior(level.data() + starts[k], level.data() + end, page_size_, &page_);
        uint32_t pgno = next();
        if (!write(pgno, page_.data())) return fail("cannot write an interior page");
        up.push_back({pgno, level[end - 1].last_rowid});
      }
      level.swap(up);
    }
  }

  // Puts `pages` on the freelist (trunk pages, each listing the ones after it, before the
  // freelist SQLite left) and writes the header with the final page count.
  bool finish(const std::vector<uint32_t>& pages) {
    // SQLite fills a trunk to 8 entries short of its capacity (older versions read no further).
    const size_t per_trunk = page_size_ / 4 - 8;
    uint32_t next_trunk = get32(header_ + 32);
    size_t groups = (pages.size() + per_trunk) / (per_trunk + 1);
    for (size_t g = groups; g-- > 0;) {  // last group first: each trunk names the next one
      size_t first = g * (per_trunk + 1), end = std::min(pages.size(), first + per_trunk + 1);
      std::fill(page_.begin(), page_.end(), 0);
      put32(page_.data(), next_trunk);
      put32(page_.data() + 4, static_cast<uint32_t>(end - first - 1));
      for (size_t k = first + 1; k < end; ++k) put32(page_.data() + 8 + 4 * (k - first - 1), pages[k]);
      if (!write(pages[first], page_.data())) return fail("cannot write a freelist page");
      next_trunk = pages[first];
    }
    put32(header_ + 32, next_trunk);
    put32(header_ + 36, get32(header_ + 36) + static_cast<uint32_t>(pages.size()));
    // The page count in the header is trusted only while "version-valid-for" equals the change counter.
    put32(header_ + 28, page_count_);
    std::memcpy(header_ + 92, header_ + 24, 4);
    // SQLite takes a file shorter than its header's page count as corrupt: free pages at the end
    // (never written) must still be in the file, as a hole.
    struct stat st {};
    const uint64_t size = uint64_t{page_count_} * page_size_;
    if (::fstat(fd_, &st) != 0 || (static_cast<uint64_t>(st.st_size) < size && ::ftruncate(fd_, static_cast<off_t>(size)) != 0))
      return fail("cannot extend it to its page count");
    return pwrite_all(fd_, header_, sizeof header_, 0) || fail("cannot update its header");
  }

 private:
  int fd_ = -1;
  std::string path_;
  std::string* error_ = nullptr;
  uint8_t header_[100];
  uint32_t page_size_ = 0, page_count_ = 0;
  std::vector<uint8_t> page_;
};

bool sort_leaves(std::vector<LeafPage>* leaves, DatabasePages* db) {
  std::sort(leaves->begin(), leaves->end(), [](const LeafPage& a, const LeafPage& b) { return a.first_rowid < b.first_rowid; });
  for (size_t i = 1; i < leaves->size(); ++i)
    if ((*leaves)[i].first_rowid <= (*leaves)[i - 1].last_rowid)
      return db->fail("rows of two writers overlap (rowid " + std::to_string((*leaves)[i].first_rowid) + ")");
  return true;
}

}  // namespace

uint32_t lock_byte_page(uint32_t page_size) { return static_cast<uint32_t>(kLockByteOffset / page_size) + 1; }

bool append_table_btree(const std::string& db_path, uint32_t root_page, const LeafScratchFile& scratch,
                        std::vector<LeafPage> leaves, std::string* error) {
  if (leaves.empty()) return true;  // the root SQLite made stays an empty leaf
  DatabasePages db;
  if (!db.open(db_path, scratch.page_size(), error) || !sort_leaves(&leaves, &db)) return false;
  std::vector<uint8_t>& page = db.buffer();
  auto copy_leaf = [&](const LeafPage& l, uint32_t to) {
    return pread_all(scratch.fd(), page.data(), page.size(), scratch.offset(l.slot)) && db.write(to, page.data());
  };
  if (leaves.size() == 1) return copy_leaf(leaves[0], root_page) || db.fail("cannot write its root page");  // the one leaf is the root
  std::vector<Child> level;
  for (const LeafPage& l : leaves) {
    uint32_t pgno = db.next();
    if (!copy_leaf(l, pgno)) return db.fail("cannot copy the rows' pages");
    level.push_back({pgno, l.last_rowid});
  }
  return db.build_interior_levels(std::move(level), root_page) && db.finish({});
}

bool assemble_in_place(const std::string& sqlite_path, const LeafScratchFile& scratch, std::vector<ScratchTable> tables,
                       std::string* error) {
  DatabasePages small;
  if (!small.open(sqlite_path, scratch.page_size(), error)) return false;
  const uint32_t n = small.page_count();
  if (n >= scratch.first_page()) return small.fail("more pages than the space reserved for them");
  std::vector<uint8_t>& page = small.buffer();
  for (uint32_t p = 1; p <= n; ++p)
    if (!pread_all(small.fd(), page.data(), page.size(), uint64_t{p - 1} * page.size()) ||
        !pwrite_all(scratch.fd(), page.data(), page.size(), uint64_t{p - 1} * page.size()))
      return small.fail("cannot copy its pages into " + scratch.path());

  DatabasePages db;
  if (!db.open(scratch.path(), scratch.page_size(), error)) return false;
  std::vector<uint32_t> free_pages;
  for (uint32_t p = n + 1; p < scratch.first_page(); ++p) free_pages.push_back(p);
  db.set_page_count(std::max(scratch.first_page() - 1, scratch.slots() ? scratch.page_of(scratch.slots() - 1) : 0));
  for (ScratchTable& t : tables) {
    if (t.leaves.empty()) continue;
    if (!sort_leaves(&t.leaves, &db)) return false;
    if (t.leaves.size() == 1) {  // the one leaf is the root; its own page is freed
      uint32_t leaf = scratch.page_of(t.leaves[0].slot);
      if (!pread_all(db.fd(), db.buffer().data(), db.page_size(), uint64_t{leaf - 1} * db.page_size()) ||
          !db.write(t.root_page, db.buffer().data()))
        return db.fail("cannot write a root page");
      free_pages.push_back(leaf);
      continue;
    }
    std::vector<Child> level;
    for (const LeafPage& l : t.leaves) level.push_back({scratch.page_of(l.slot), l.last_rowid});
    if (!db.build_interior_levels(std::move(level), t.root_page)) return false;
  }
  return db.finish(free_pages);
}

}  // namespace sigmatrace::exporter
