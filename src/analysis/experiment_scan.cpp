// See experiment_scan.h.
#include "analysis/experiment_scan.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "format/event_types.h"
#include "format/experiment_layout.h"

namespace sigmatrace::analysis {

using format::EventType;

ClockFit fit_clock(const std::vector<ClockSamplePoint>& samples) {
  ClockFit f;
  f.samples = samples.size();
  if (samples.size() < 2) return f;
  f.anchor_tsc = samples.front().tsc;
  f.anchor_realtime_ns = static_cast<int64_t>(samples.front().realtime_ns);
  // Least squares on values relative to the anchor (exact integer differences).
  auto rel_t = [&](const ClockSamplePoint& s) { return static_cast<double>(static_cast<int64_t>(s.tsc - f.anchor_tsc)); };
  auto rel_r = [&](const ClockSamplePoint& s) {
    return static_cast<double>(static_cast<int64_t>(s.realtime_ns) - f.anchor_realtime_ns);
  };
  double st = 0, sr = 0, stt = 0, str = 0, n = static_cast<double>(samples.size());
  for (const ClockSamplePoint& s : samples) {
    double t = rel_t(s), r = rel_r(s);
    st += t, sr += r, stt += t * t, str += t * r;
  }
  double den = n * stt - st * st;
  if (den <= 0) return f;
  double b = (n * str - st * sr) / den;
  double a = (sr - b * st) / n;
  if (!(b > 0) || !std::isfinite(b)) return f;
  f.valid = true;
  f.ns_per_tick = b;
  f.intercept_ns = a;
  for (const ClockSamplePoint& s : samples) f.max_residual_ns = std::max(f.max_residual_ns, std::fabs(a + b * rel_t(s) - rel_r(s)));
  return f;
}

uint64_t FileSummary::events_dropped() const {
  if (has_file_end) return end_events_dropped;
  uint64_t n = 0;
  for (const auto& [tid, t] : threads) n += t.events_dropped;
  return n;
}

uint64_t FileSummary::events_missing_at_least() const {
  if (has_file_end) return 0;
  uint64_t n = 0;
  for (const auto& [tid, t] : threads)
    if (t.progress_recorded > t.events_in_file) n += t.progress_recorded - t.events_in_file;
  return n;
}

uint64_t FileSummary::last_progress_tsc() const {
  uint64_t last = 0;
  for (const auto& [tid, t] : threads) last = std::max(last, t.progress_tsc);
  return last;
}

std::string FileSummary::meta_value(const std::string& key) const {
  const std::string* v = format::find_meta(meta, key);
  return v ? *v : std::string();
}

long FileSummary::rank() const {
  if (mpi_rank >= 0) return mpi_rank;
  std::string v = meta_value("rank");
  char* end = nullptr;
  long r = v.empty() ? -1 : std::strtol(v.c_str(), &end, 10);
  return end && *end == '\0' ? r : -1;
}

const char* exit_reason_name(uint64_t reason) {
  switch (static_cast<format::ExitReason>(reason)) {
    case format::ExitReason::normal_exit: return "exit";
    case format::ExitReason::signal: return "signal";
    case format::ExitReason::crash: return "crash";
    case format::ExitReason::exec: return "exec";
  }
  return "unknown";
}

FileSummary scan_trace_file(const std::string& path, const ScanHooks* hooks) {
  FileSummary fs;
  fs.path = path;
  format::TraceFileReader reader;
  if (!reader.open(path, &fs.error)) return fs;
  fs.usable = true;
  fs.meta = reader.metadata();
  fs.version_major = reader.version_major();
  fs.version_minor = reader.version_minor();
  fs.file_bytes = reader.file_bytes();
  const format::Schema& schema = reader.schema();
  format::Chunk chunk;
  format::DecodedEvent ev;
  // Counted by position in the file's schema (no string lookup per event), named at the end.
  std::vector<uint64_t> count_by_type(schema.types.size(), 0);
  while (reader.next_chunk(&chunk)) {
    ++fs.chunks;
    uint32_t tid = chunk.header.tid;
    if (hooks && hooks->bytes_done) *hooks->bytes_done += sizeof(chunk.header) + chunk.header.stored_bytes;
    const std::vector<bool>* filter = tid != 0 && hooks ? hooks->thread_types_wanted : nullptr;
    format::ChunkEventDecoder dec(chunk.header, chunk.payload.data(), chunk.payload.size(), &schema, filter);
    uint64_t in_chunk = 0;
    while (dec.next(&ev)) {
      ++in_chunk;
      ++count_by_type[static_cast<size_t>(ev.desc - schema.types.data())];
      if (tid != 0) {
        if (!fs.first_tsc || ev.tsc < fs.first_tsc) fs.first_tsc = ev.tsc;
        fs.last_tsc = std::max(fs.last_tsc, ev.tsc);
        if (hooks && hooks->on_thread_event) hooks->on_thread_event(tid, ev);
        continue;
      }
      switch (static_cast<EventType>(ev.type)) {
        case EventType::clock_sync: fs.clock_samples.push_back({ev.tsc, ev.values[0], ev.values[1]}); break;
        case EventType::thread_info: {
          ThreadSummary& t = fs.threads[static_cast<uint32_t>(ev.values[0])];
          t.tid = static_cast<uint32_t>(ev.values[0]);
          t.name = std::string(ev.bytes[1]);
          break;
        }
        case EventType::thread_summary: {
          ThreadSummary& t = fs.threads[static_cast<uint32_t>(ev.values[0])];
          t.tid = static_cast<uint32_t>(ev.values[0]);
          // Summed: the kernel may give a later thread the tid of one that has ended.
          t.has_summary = true;
          t.events_recorded += ev.values[1];
          t.events_dropped += ev.values[2];
          t.chunks_dropped += ev.values[3];
          t.aggregate_overflow += ev.values[4];
          break;
        }
        case EventType::thread_progress: {
          ThreadSummary& t = fs.threads[static_cast<uint32_t>(ev.values[0])];
          t.tid = static_cast<uint32_t>(ev.values[0]);
          if (ev.tsc >= t.progress_tsc) {
            t.progress_tsc = ev.tsc;
            t.progress_recorded = ev.values[1];
          }
          break;
        }
        case EventType::write_failure:
          fs.write_failure.failed = true;
          fs.write_failure.file_bytes = ev.values[0];
          fs.write_failure.chunks_lost = ev.values[1];
          fs.write_failure.events_lost = ev.values[2];
          fs.write_failure.error = std::string(ev.bytes[3]);
          break;
        case EventType::hang_dump:  // reason idle_ns completions gpu_kernels_running
          if (ev.field_count >= 3)
            fs.hang_dumps.push_back({ev.tsc, ev.values[0], ev.values[1], ev.values[2], ev.field_count >= 4 ? ev.values[3] : 0});
          break;
        case EventType::rank_update:  // rank size source: MPI's own answer wins over the launcher's
          if (ev.field_count >= 3 && static_cast<int64_t>(ev.values[0]) >= 0 &&
              (ev.bytes[2] == "MPI_COMM_WORLD" || fs.mpi_rank_source != "MPI_COMM_WORLD")) {
            fs.mpi_rank = static_cast<long>(static_cast<int64_t>(ev.values[0]));
            fs.mpi_rank_source = std::string(ev.bytes[2]);
          }
          break;
        case EventType::provider_status:
          fs.providers.push_back({std::string(ev.bytes[0]), ev.values[1] != 0, std::string(ev.bytes[2])});
          break;
        case EventType::aggregate_entry:  // tid kind a b count bytes
          if (ev.field_count >= 4 && ev.values[1] == static_cast<uint64_t>(format::AggregateKey::ibv_endpoint_pair))
            fs.aggregate_endpoint_pairs.emplace_back(ev.values[2], ev.values[3]);
          break;
        case EventType::file_end:
          fs.has_file_end = true;
          fs.file_end_tsc = ev.tsc;
          fs.end_chunks_written = ev.values[0];
          fs.end_events_written = ev.values[1];
          fs.end_events_dropped = ev.values[2];
          fs.end_exit_reason = ev.values[3];
          break;
        default: break;
      }
    }
    if (dec.failed()) ++fs.undecodable_chunks;
    fs.events += in_chunk;
    if (tid != 0) {
      ThreadSummary& t = fs.threads[tid];
      t.tid = tid;
      t.events_in_file += in_chunk;
    }
  }
  for (size_t i = 0; i < count_by_type.size(); ++i)
    if (count_by_type[i]) fs.events_by_type[schema.types[i].name] += count_by_type[i];
  fs.losses = reader.losses();
  fs.chunks_missing = reader.chunks_missing();
  std::sort(fs.clock_samples.begin(), fs.clock_samples.end(),
            [](const ClockSamplePoint& a, const ClockSamplePoint& b) { return a.tsc < b.tsc; });
  fs.clock = fit_clock(fs.clock_samples);
  return fs;
}

ExperimentSummary scan_experiment(const std::string& dir, unsigned threads) {
  ExperimentSummary es;
  es.dir = dir;
  std::vector<std::string> files = format::list_trace_files(dir);
  es.files.resize(files.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(1, files.size())));
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads; ++i)
    pool.emplace_back([&] {
      for (size_t k; (k = next.fetch_add(1)) < files.size();) es.files[k] = scan_trace_file(files[k]);
    });
  for (std::thread& t : pool) t.join();
  for (const FileSummary& f : es.files)
    if (!f.usable) es.skipped.push_back(f.error);
  return es;
}

}  // namespace sigmatrace::analysis
