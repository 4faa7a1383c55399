// See nvtx_ranges.h.
#include "analysis/nvtx_ranges.h"

#include <algorithm>
#include <cstring>

#include "format/event_types.h"

namespace sigmatrace::analysis {

using format::EventType;
using format::NvtxKind;

namespace {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t from = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.emplace_back(s.substr(from, i - from));
      from = i + 1;
    }
  return out;
}

uint64_t to_u64(const std::string& s) { return s.empty() ? 0 : std::strtoull(s.c_str(), nullptr, 10); }

// Byte size of a predefined payload entry type (as the profiler resolved offsets); 0: not a scalar.
uint64_t scalar_size(uint64_t type) {
  switch (type) {
    case 1: case 2: case 11: case 12: case 25: case 32: return 1;
    case 3: case 4: case 13: case 14: case 26: return 2;
    case 5: case 6: case 15: case 16: case 19: case 24: case 27: case 43: case 68: case 69: case 71: case 73: return 4;
    case 7: case 8: case 9: case 10: case 17: case 18: case 20: case 22: case 23: case 44: case 70: case 72: case 74:
    case 75: case 76: case 77: case 78: case 80: return 8;
    default: return 0;
  }
}
bool is_signed(uint64_t type) { return type == 1 || type == 3 || type == 5 || type == 7 || type == 9 || type == 11 || type == 13 || type == 15 || type == 17; }
bool is_float(uint64_t type) { return type == 19 || type == 20 || type == 43 || type == 44; }
bool is_char(uint64_t type) { return type == 1 || type == 2 || type == 25; }

}  // namespace

void NvtxCollector::on_event(uint32_t tid, const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;
  switch (static_cast<EventType>(ev.type)) {
    case EventType::nvtx_domain: domains_[v[0]] = std::string(ev.bytes[1]); break;
    case EventType::nvtx_string: strings_[v[1]] = std::string(ev.bytes[2]); break;
    case EventType::nvtx_category: categories_[{v[0], v[1]}] = std::string(ev.bytes[2]); break;
    case EventType::nvtx_schema: {
      Schema& s = schemas_[v[1]];
      s.kind = v[2], s.size = v[3];
      s.lines.clear();
      for (const std::string& line : split(ev.bytes[4], '\n'))
        if (!line.empty()) s.lines.push_back(split(line, '\t'));
      break;
    }
    case EventType::nvtx_begin: {
      const uint32_t index = static_cast<uint32_t>(ranges_.size());
      RangeRow r;
      r.tid = tid;
      r.kind = v[1];
      r.start_tsc = r.end_tsc = ev.tsc;
      r.category = v[3], r.color = v[4];
      r.name = std::string(ev.bytes[8]);
      std::vector<uint32_t>& inner = innermost_[tid];
      if (!inner.empty()) r.parent = inner.back(), r.depth = ranges_[inner.back()].depth + 1;
      Pending p;
      p.domain = v[0], p.message_handle = v[7];
      if (v[5] != 0 && static_cast<int32_t>(v[5]) != static_cast<int32_t>(0xDFBD0009u))  // a plain numeric payload
        r.payload = "payload=" + std::to_string(v[6]);
      ranges_.push_back(std::move(r));
      pending_.push_back(std::move(p));
      last_begun_[tid] = index;
      if (v[1] == static_cast<uint64_t>(NvtxKind::mark)) {
        ranges_.back().ended = true;
        break;
      }
      inner.push_back(index);
      if (v[1] == static_cast<uint64_t>(NvtxKind::push)) open_[{tid, v[0]}].push_back(index);
      else started_[v[2]] = index;
      break;
    }
    case EventType::nvtx_payload: {
      auto it = last_begun_.find(tid);
      if (it == last_begun_.end()) break;
      Pending& p = pending_[it->second];
      if (p.has_payload) break;  // the first payload describes the range; more are kept out
      p.has_payload = true, p.schema = v[0], p.payload_bytes = std::string(ev.bytes[2]);
      break;
    }
    case EventType::nvtx_end: {
      uint32_t index = 0;
      if (v[1] == static_cast<uint64_t>(NvtxKind::push)) {
        auto it = open_.find({tid, v[0]});
        if (it == open_.end() || it->second.empty()) {
          ++unmatched_ends_;
          break;
        }
        index = it->second.back();
        it->second.pop_back();
      } else {
        auto it = started_.find(v[2]);
        if (it == started_.end()) {
          ++unmatched_ends_;
          break;
        }
        index = it->second;
        started_.erase(it);
      }
      RangeRow& r = ranges_[index];
      r.end_tsc = std::max(ev.tsc, r.start_tsc), r.ended = true;
      std::vector<uint32_t>& inner = innermost_[r.tid];
      if (auto pos = std::find(inner.rbegin(), inner.rend(), index); pos != inner.rend()) inner.erase(std::next(pos).base());
      break;
    }
    default: break;
  }
}

std::string NvtxCollector::decode(const Pending& p, RangeCounters* counters) const {
  auto schema = schemas_.find(p.schema);
  if (schema == schemas_.end() || schema->second.kind != 1) {
    ++counters->undecoded_payloads;
    return "schema=" + std::to_string(p.schema) + " bytes=" + std::to_string(p.payload_bytes.size());
  }
  const std::string& b = p.payload_bytes;
  std::string out;
  bool cut = false;
  for (const std::vector<std::string>& e : schema->second.lines) {
    if (e.size() < 5) continue;
    const uint64_t type = to_u64(e[1]), flags = to_u64(e[2]), offset = to_u64(e[3]), elements = std::max<uint64_t>(1, to_u64(e[4]));
    constexpr uint64_t kHide = 1 << 9;
    if (flags & kHide) continue;
    std::string value;
    auto enum_schema = schemas_.find(type);
    const bool is_enum = enum_schema != schemas_.end() && enum_schema->second.kind == 2;
    const uint64_t size = is_enum ? enum_schema->second.size : scalar_size(type);
    if (!size || offset + size * elements > b.size()) {
      cut |= size != 0;
      continue;
    }
    if (is_char(type) && elements > 1) {
      value.assign(b.data() + offset, strnlen(b.data() + offset, elements));
    } else {
      uint64_t raw = 0;
      std::memcpy(&raw, b.data() + offset, std::min<uint64_t>(size, 8));
      if (is_enum) {
        value = std::to_string(raw);
        for (const std::vector<std::string>& n : enum_schema->second.lines)
          if (n.size() >= 2 && to_u64(n[1]) == raw) value = n[0];
      } else if (is_float(type)) {
        double d = 0;
        if (size == 4) {
          float f;
          std::memcpy(&f, &raw, 4);
          d = f;
        } else {
          std::memcpy(&d, &raw, 8);
        }
        value = std::to_string(d);
      } else if (is_signed(type)) {
        const int shift = int(64 - 8 * size);
        value = std::to_string(static_cast<int64_t>(raw << shift) >> shift);
      } else if (type == 23 || (type >= 75 && type <= 78)) {
        char hex[24];
        std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(raw));
        value = hex;
      } else {
        value = std::to_string(raw);
      }
    }
    out += (out.empty() ? "" : " ") + e[0] + "=" + value;
  }
  if (cut) ++counters->undecoded_payloads;
  return out;
}

std::vector<RangeRow> NvtxCollector::finish(uint64_t last_tsc, RangeCounters* counters) {
  for (size_t i = 0; i < ranges_.size(); ++i) {
    RangeRow& r = ranges_[i];
    const Pending& p = pending_[i];
    if (p.message_handle)
      if (auto s = strings_.find(p.message_handle); s != strings_.end()) r.name = s->second;
    if (p.domain)
      if (auto d = domains_.find(p.domain); d != domains_.end()) r.domain = d->second;
    if (r.category)
      if (auto c = categories_.find({p.domain, r.category}); c != categories_.end()) r.category_name = c->second;
    if (p.has_payload) r.payload = decode(p, counters);
    if (!r.ended) r.end_tsc = std::max(last_tsc, r.start_tsc), ++counters->unended;
    r.path = r.parent >= 0 ? ranges_[static_cast<size_t>(r.parent)].path + " / " + r.name : (r.domain.empty() ? r.name : r.domain + " / " + r.name);
    if (r.kind == static_cast<uint64_t>(NvtxKind::mark)) ++counters->marks;
    else ++counters->ranges;
  }
  counters->unmatched_ends += unmatched_ends_;
  return std::move(ranges_);
}

void ProcessRanges::set(std::vector<RangeRow> rows) {
  rows_ = std::move(rows);
  by_thread_.clear();
  for (uint32_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].kind != static_cast<uint64_t>(NvtxKind::mark)) by_thread_[rows_[i].thread_id].push_back(i);
  for (auto& [thread, v] : by_thread_)
    std::stable_sort(v.begin(), v.end(), [this](uint32_t a, uint32_t b) { return rows_[a].start_ns < rows_[b].start_ns; });
}

int64_t ProcessRanges::at(int64_t thread_id, int64_t ts_ns) const {
  if (int64_t own = on_thread(thread_id, ts_ns); own >= 0) return own;
  // A thread with no range open works for one that has (PyTorch's autograd threads run the
  // backward pass for the thread waiting in its "backward" range): when exactly one other thread
  // of the process has a range open then, its innermost one. Two or more: nobody's.
  int64_t found = -1;
  for (const auto& [other, v] : by_thread_) {
    if (other == thread_id) continue;
    const int64_t r = on_thread(other, ts_ns);
    if (r < 0) continue;
    if (found >= 0) return -1;
    found = r;
  }
  return found;
}

int64_t ProcessRanges::on_thread(int64_t thread_id, int64_t ts_ns) const {
  auto t = by_thread_.find(thread_id);
  if (t == by_thread_.end()) return -1;
  const std::vector<uint32_t>& v = t->second;
  auto it = std::upper_bound(v.begin(), v.end(), ts_ns, [this](int64_t ts, uint32_t i) { return ts < rows_[i].start_ns; });
  if (it == v.begin()) return -1;
  // The latest range begun before ts, or the first of its enclosing ranges still open then.
  for (int64_t i = *(it - 1); i >= 0; i = rows_[static_cast<size_t>(i)].parent) {
    const RangeRow& r = rows_[static_cast<size_t>(i)];
    if (ts_ns <= r.end_ns && r.kind != static_cast<uint64_t>(NvtxKind::mark)) return i;
  }
  return -1;
}

}  // namespace sigmatrace::analysis
