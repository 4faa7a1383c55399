// See sqlite_table_reader.h.
#include "export/sqlite_table_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "export/sqlite_bytes.h"

namespace sigmatrace::exporter {

using namespace sqlite_format;

namespace {

constexpr unsigned kMaxDepth = 24;  // a table of 2^64 rows is shallower; deeper means a loop

class TableWalk {
 public:
  TableWalk(int fd, uint32_t page_size, uint32_t usable, uint32_t pages, const TableRowVisitor& row, std::string* error)
      : fd_(fd), page_size_(page_size), usable_(usable), pages_(pages), row_(row), error_(error), buffers_(kMaxDepth) {}

  bool visit(uint32_t page, unsigned depth) {
    if (depth >= kMaxDepth) return fail("its B-tree is deeper than " + std::to_string(kMaxDepth) + " levels (a loop?)");
    if (page == 0 || page > pages_) return fail("a B-tree page number (" + std::to_string(page) + ") is past its end");
    std::vector<uint8_t>& b = buffers_[depth];
    b.resize(page_size_);
    if (!read_page(page, b.data())) return false;
    const uint32_t hdr = page == 1 ? kFileHeader : 0;
    const uint8_t type = b[hdr];
    const uint32_t cells = get16(&b[hdr + 3]);
    const bool leaf = type == kLeafTablePage;
    if (!leaf && type != kInteriorTablePage) return fail("page " + std::to_string(page) + " is not a table B-tree page");
    const uint32_t pointers = hdr + (leaf ? kLeafHeader : kInteriorHeader);
    if (pointers + 2 * cells > usable_) return fail("page " + std::to_string(page) + " has more cells than fit");
    for (uint32_t c = 0; c < cells; ++c) {
      const uint32_t off = get16(&b[pointers + 2 * c]);
      if (off < pointers + 2 * cells || off + 4 > usable_) return fail("a cell of page " + std::to_string(page) + " lies outside it");
      if (!leaf) {
        if (!visit(get32(&b[off]), depth + 1)) return false;
        continue;
      }
      uint64_t payload = 0, rowid = 0;
      const size_t n1 = get_varint(&b[off], usable_ - off, &payload);
      const size_t n2 = n1 ? get_varint(&b[off + n1], usable_ - off - n1, &rowid) : 0;
      if (!n2) return fail("a cell of page " + std::to_string(page) + " does not parse");
      if (payload > usable_ - 35) return fail("a row of " + std::to_string(payload) + " bytes has overflow pages, which this does not read");
      if (off + n1 + n2 + payload > usable_) return fail("a row of page " + std::to_string(page) + " runs past it");
      if (!row_(static_cast<int64_t>(rowid), &b[off + n1 + n2], static_cast<uint32_t>(payload))) return false;
    }
    return leaf || visit(get32(&b[hdr + 8]), depth + 1);  // an interior page's right-most child
  }

 private:
  bool read_page(uint32_t page, uint8_t* p) {
    size_t n = page_size_;
    uint64_t off = uint64_t{page - 1} * page_size_;
    while (n) {
      const ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(off));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return fail("cannot read page " + std::to_string(page) + (r < 0 ? std::string(": ") + std::strerror(errno) : ""));
      p += r, n -= static_cast<size_t>(r), off += static_cast<uint64_t>(r);
    }
    return true;
  }
  bool fail(const std::string& what) {
    *error_ = what;
    return false;
  }
  int fd_;
  uint32_t page_size_, usable_, pages_;
  const TableRowVisitor& row_;
  std::string* error_;
  std::vector<std::vector<uint8_t>> buffers_;  // one page per level of the walk
};

}  // namespace

bool read_table_rows(const std::string& db_path, uint32_t root_page, const TableRowVisitor& row, std::string* error) {
  const int fd = ::open(db_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open " + db_path + ": " + std::strerror(errno);
    return false;
  }
  uint8_t header[kFileHeader];
  struct stat st {};
  bool ok = ::pread(fd, header, sizeof header, 0) == static_cast<ssize_t>(sizeof header) && ::fstat(fd, &st) == 0 &&
            std::memcmp(header, "SQLite format 3", 16) == 0;
  std::string what;
  if (ok) {
    const uint32_t page_size = get16(header + 16) == 1 ? 65536 : get16(header + 16);
    const uint32_t usable = page_size - header[20];
    ok = page_size >= 512 && usable >= 480;
    if (ok) {
      TableWalk walk(fd, page_size, usable, static_cast<uint32_t>(static_cast<uint64_t>(st.st_size) / page_size), row, &what);
      ok = walk.visit(root_page, 0);
    }
  } else {
    what = "not an SQLite database";
  }
  ::close(fd);
  if (!ok && !what.empty()) *error = db_path + ": " + what;
  return ok;
}

}  // namespace sigmatrace::exporter
