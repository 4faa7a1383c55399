#include "profiler/doorbell/wqe_recovery.h"

#include <time.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "mlx5/wqe_parse.hpp"
#include "profiler/runtime/log.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler::doorbell {

using format::DoorbellKind;
using format::DoorbellWqeClass;
using format::EventType;
using format::SqMemory;
namespace m5 = sigmatrace::mlx5;

namespace {

struct Settings {
  const std::atomic<bool>* active = nullptr;
  bool wqe = false;
  bool aggregate = false;
  uint32_t batch = 128;  // kWqeBatchSync: sync
  bool copy_at_doorbell = false;
};
Settings g_settings;
std::atomic<bool> g_failure_logged{false};

bool recording() { return g_settings.active && g_settings.active->load(std::memory_order_relaxed); }

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void log_failure_once(uint32_t qpn, const std::string& why) {
  if (!g_failure_logged.exchange(true))
    log_line("the WQEs of GPU-initiated QP 0x%x (and possibly others) are not recovered: %s; its doorbells are still traced "
             "and forwarded",
             qpn, why.c_str());
}

// Data doorbells move payload (a WRITE, READ or SEND of more than a flag's size); control
// doorbells only signal (atomics, NOPs, small puts).
bool is_data(const m5::ParsedWqe& p) {
  switch (p.ctrl.opcode) {
    case m5::kOpRdmaWrite:
    case m5::kOpRdmaWriteImm:
    case m5::kOpSend:
    case m5::kOpSendImm:
    case m5::kOpRdmaRead:
      return p.length > format::kControlPutMaxBytes;
    default:
      return false;
  }
}

}  // namespace

void configure_recovery(const Config& config, const std::atomic<bool>* active) {
  g_settings.active = active;
  g_settings.wqe = config.doorbells == DoorbellMode::wqe;
  g_settings.aggregate = config.mode == TraceMode::aggregate;
  g_settings.batch = config.wqe_batch;
  g_settings.copy_at_doorbell = config.wqe_copy_at_doorbell;
}

bool recovering_wqes() { return g_settings.wqe; }

namespace {
std::atomic<bool> g_driver_calls{true};
}
bool driver_calls_allowed() { return g_driver_calls.load(std::memory_order_acquire); }
void forbid_driver_calls() { g_driver_calls.store(false, std::memory_order_release); }
bool recovering_sync() { return g_settings.wqe && g_settings.batch == kWqeBatchSync; }

namespace {
// A ring of 2^log_wqebbs WQEBBs twice: the first copy and its check.
size_t two_rings(uint32_t log_wqebbs) { return 2 * (size_t(m5::kWqeBbSize) << log_wqebbs); }
}  // namespace

size_t staging_bytes_for(const SendQueue& sq) {
  if (!g_settings.wqe || sq.memory != SqMemory::gpu || sq.log_wqebbs > 16) return 0;
  return two_rings(sq.log_wqebbs);
}

cuda::DeviceCopyStream* CopyStreams::for_context(uintptr_t context, std::string* why) {
  for (int i = 0; i < count_; ++i)
    if (streams_[i].context() == context) return &streams_[i];
  if (count_ == kMax) {
    *why = "more CUDA contexts than one poller keeps copy streams for";
    return nullptr;
  }
  if (!streams_[count_].open(context, why)) return nullptr;
  return &streams_[count_++];
}

void CopyStreams::forget(uintptr_t context, bool alive) {
  for (int i = 0; i < count_; ++i)
    if (streams_[i].context() == context) {
      if (alive && driver_calls_allowed()) streams_[i].close();
      streams_[i].abandon();  // the slot stays (queues point at it); a new context takes a new one
    }
  if (alive && driver_calls_allowed()) cuda::leave_context(context);
}

void CopyStreams::close_all() {
  for (int i = 0; i < count_; ++i) streams_[i].close();
  count_ = 0;
}

SqRecovery* SqRecovery::create(uintptr_t device_context, uint32_t qpn, uint32_t page_id, CopyStreams* streams) {
  auto* r = new (std::nothrow) SqRecovery();
  if (!r) return nullptr;
  r->page_id_ = page_id;
  r->sq_.qpn = qpn;
  r->streams_ = streams;
  // not a QP created with devx CREATE_QP on this device here
  if (!find_send_queue(device_context, qpn, &r->sq_, &r->ref_)) return r;
  std::string why;
  const uint32_t slots = 1u << r->sq_.log_wqebbs;
  const size_t bytes = two_rings(r->sq_.log_wqebbs);
  r->staging_bytes_ = bytes;
  if (r->sq_.memory == SqMemory::gpu && !driver_calls_allowed()) {
    why = "the process is exiting (or is a forked child): its GPU memory is not read";
  } else if (r->sq_.memory == SqMemory::gpu) {
    r->stream_ = streams->for_context(r->sq_.cu_context, &why);
    // Made ready when the QP was created; allocated here only if that could not be done then.
    if (r->stream_ && !(r->staging_ = static_cast<uint8_t*>(take_staging(r->ref_, bytes, &r->staging_context_)))) {
      r->staging_context_ = r->sq_.cu_context;  // the stream's, current on this thread now
      if (!(r->staging_ = static_cast<uint8_t*>(cuda::alloc_pinned(bytes)))) why = "cannot allocate pinned memory for the WQE copies";
    }
    r->pinned_ = true;
  } else if (r->sq_.memory == SqMemory::host) {
    if (!(r->staging_ = static_cast<uint8_t*>(malloc(bytes)))) why = "out of memory";
  } else {
    why = "its send queue is in memory the driver does not describe (a dma-buf)";
  }
  if (!r->staging_) {
    log_failure_once(qpn, why);
    r->sq_.memory = SqMemory::unknown;
    return r;
  }
  r->known_ = true;
  r->slots_ = slots;
  r->mask_ = slots - 1;
  r->batch_ = g_settings.batch == kWqeBatchSync ? 1 : (g_settings.batch < slots ? g_settings.batch : slots);
  // Slots may wait for their copy while the GPU goes on posting: never more than a quarter of
  // the ring, so that the GPU cannot have reused them before the copy reads them.
  r->copy_chunk_ = slots / 4 > kWqeCopyChunk ? kWqeCopyChunk : (slots / 4 ? slots / 4 : 1);
  return r;
}

SqRecovery::~SqRecovery() {
  if (pinned_ && !driver_calls_allowed()) return;  // pinned memory is the driver's: left to the process's end
  if (pinned_) give_back_staging(staging_, staging_bytes_, staging_context_);  // for a later queue; no driver call here
  else free(staging_);
}

bool SqRecovery::copy_slots(uint64_t from, uint32_t count) {
  // The slots twice, the check after the first copy (in stream order for GPU memory); each time
  // in at most two pieces: up to the end of the ring, then from its start.
  const size_t check = size_t(slots_) * m5::kWqeBbSize;
  for (size_t into : {size_t{0}, check}) {
    uint64_t at = from;
    for (uint32_t left = count; left;) {
      const uint32_t slot = uint32_t(at) & mask_;
      const uint32_t n = left < slots_ - slot ? left : slots_ - slot;
      const size_t off = size_t(slot) * m5::kWqeBbSize, len = size_t(n) * m5::kWqeBbSize;
      if (sq_.memory == SqMemory::gpu) {
        if (!driver_calls_allowed() || !stream_->copy(staging_ + into + off, sq_.addr + off, len)) return false;
      } else {
        memcpy(staging_ + into + off, reinterpret_cast<const uint8_t*>(sq_.addr) + off, len);
      }
      copies_ += into == 0;  // a copy and its check count once
      at += n;
      left -= n;
    }
  }
  return true;
}

void SqRecovery::record_unread(const Pending& d) {
  if (!recording() || g_settings.aggregate) return;
  record_at<EventType::gpu_doorbell>(d.tsc, uint64_t{page_id_}, uint64_t{sq_.qpn}, uint64_t{d.pi}, uint64_t{d.delta},
                                     static_cast<uint64_t>(d.kind), static_cast<uint64_t>(DoorbellWqeClass::not_read), uint64_t{0});
}

void SqRecovery::doorbell(uint64_t tsc, uint16_t pi, uint32_t delta, DoorbellKind kind) {
  Pending d{tsc, announced_ + delta, pi, delta, kind};
  if (!known_) {
    unread_ += delta;
    announced_ = copied_ = parsed_ = d.end;
    record_unread(d);
    return;
  }
  if (delta > slots_) {  // the index went backwards, or more was announced than the ring holds
    drain();
    ++index_errors_;
    // Go on from the index the doorbell gave: the counter's low 16 bits are always the last pi.
    announced_ = copied_ = parsed_ = (announced_ & ~uint64_t{0xffff}) | pi;
    record_unread(d);
    return;
  }
  if (announced_ - parsed_ + delta > slots_ || npending_ == kMaxPending) drain();  // staging would be overwritten
  announced_ = d.end;
  pending_[npending_++] = d;
  if (g_settings.copy_at_doorbell || announced_ - copied_ >= copy_chunk_) copy_pending();
  if (announced_ - parsed_ >= batch_) drain();
}

void SqRecovery::copy_pending() {
  if (announced_ == copied_) return;
  if (!copy_slots(copied_, uint32_t(announced_ - copied_))) copy_failed_ = true;
  copied_ = announced_;
}

const uint8_t* SqRecovery::wqe_bytes(uint64_t counter, uint32_t wqebbs, bool check) {
  const uint8_t* copy = staging_ + (check ? size_t(slots_) * m5::kWqeBbSize : 0);
  const uint32_t slot = uint32_t(counter) & mask_;
  if (slot + wqebbs <= slots_) return copy + size_t(slot) * m5::kWqeBbSize;
  uint8_t* out = linear_[check];
  for (uint32_t i = 0; i < wqebbs; ++i)
    memcpy(out + i * m5::kWqeBbSize, copy + size_t((counter + i) & mask_) * m5::kWqeBbSize, m5::kWqeBbSize);
  return out;
}

DoorbellWqeClass SqRecovery::walk(const Pending& d, bool record, uint32_t* wqes) {
  DoorbellWqeClass cls = DoorbellWqeClass::not_read;
  uint32_t n = 0;
  uint64_t at = parsed_;
  m5::ParsedWqe p;
  while (at < d.end) {
    m5::CtrlSeg c;
    memcpy(&c, staging_ + size_t(uint32_t(at) & mask_) * m5::kWqeBbSize, sizeof c);
    const m5::CtrlFields f = m5::decode_ctrl(c);
    if (f.idx != uint16_t(at) || f.qpn != sq_.qpn) {  // the slot holds a later WQE (or is no WQE's start)
      if (record) ++lost_;
      ++at;
      continue;
    }
    const uint32_t wqebbs = f.ds ? (uint32_t(f.ds) * m5::kDsUnit + m5::kWqeBbSize - 1) / m5::kWqeBbSize : 1;
    if (at + wqebbs > d.end) {  // runs past what the doorbell announced
      if (record) ++damaged_;
      at = d.end;
      break;
    }
    // Its two copies differ: the GPU wrote its slots while they were read (a torn read).
    const uint8_t* bytes = wqe_bytes(at, wqebbs);
    if (memcmp(bytes, wqe_bytes(at, wqebbs, true), size_t(wqebbs) * m5::kWqeBbSize) != 0) {
      if (record) ++damaged_;
      at += wqebbs;
      continue;
    }
    p = m5::ParsedWqe{};
    if (m5::parse_wqe(bytes, wqebbs * m5::kWqeBbSize, &p, sq_.dc_initiator) != 0) {
      if (record) ++damaged_;
      at += wqebbs;
      continue;
    }
    ++n;
    if (is_data(p)) cls = DoorbellWqeClass::data;
    else if (cls == DoorbellWqeClass::not_read) cls = DoorbellWqeClass::control;
    if (record) {
      ++recovered_;
      wqebbs_ += wqebbs;
      const uint64_t laddr = p.num_sge ? p.sge[0].addr : 0;
      const uint64_t lkey = p.num_sge ? p.sge[0].lkey : 0;
      if (g_settings.aggregate)
        aggregate_add(format::AggregateKey::gpu_wqe_qp_opcode, sq_.qpn, p.ctrl.opcode, p.length);
      else if (recording())
        record_at<EventType::gpu_wqe>(d.tsc, uint64_t{sq_.qpn}, uint64_t{f.idx}, uint64_t{d.pi}, uint64_t{f.opcode}, uint64_t{f.opmod},
                                      uint64_t{f.ds}, uint64_t{f.fm_ce_se}, p.length, p.raddr, uint64_t{p.rkey}, laddr, lkey,
                                      uint64_t{p.num_sge}, uint64_t{p.inline_data}, uint64_t{m5::be32(p.imm)}, p.swap_add, p.compare,
                                      p.swap_mask, p.compare_mask, uint64_t{p.dct}, uint64_t{p.rlid}, uint64_t{p.atomic_bytes});
    }
    at += wqebbs;
  }
  if (record) parsed_ = d.end;
  *wqes = n;
  return cls;
}

void SqRecovery::drain() {
  if (!npending_) return;
  copy_pending();
  bool ok = !copy_failed_;
  if (ok && sq_.memory == SqMemory::gpu) {
    const uint64_t t0 = monotonic_ns();
    ok = driver_calls_allowed() && stream_->wait(streams_->while_waiting());
    const uint64_t waited = monotonic_ns() - t0;
    wait_ns_ += waited;
    if (waited > max_wait_ns_) max_wait_ns_ = waited;
  }
  ++batches_;
  for (uint32_t i = 0; i < npending_; ++i) {
    const Pending& d = pending_[i];
    if (!ok) {
      unread_ += d.end - parsed_;
      parsed_ = d.end;
      record_unread(d);
      continue;
    }
    uint32_t wqes = 0;
    const DoorbellWqeClass cls = walk(d, false, &wqes);
    if (recording() && !g_settings.aggregate)
      record_at<EventType::gpu_doorbell>(d.tsc, uint64_t{page_id_}, uint64_t{sq_.qpn}, uint64_t{d.pi}, uint64_t{d.delta},
                                         static_cast<uint64_t>(d.kind), static_cast<uint64_t>(cls), uint64_t{wqes});
    walk(d, true, &wqes);
  }
  if (!ok && driver_calls_allowed()) log_failure_once(sq_.qpn, "a copy of its send queue failed");
  npending_ = 0;
  copy_failed_ = false;
}

void SqRecovery::context_gone(uintptr_t context, bool alive) {
  const bool staging_gone = pinned_ && staging_context_ == context;
  const bool queue_gone = known_ && sq_.memory == SqMemory::gpu && sq_.cu_context == context;
  if (!staging_gone && !queue_gone) return;
  if (alive) drain();
  else npending_ = 0;
  if (staging_gone) {  // pinned memory goes with its context
    if (alive && driver_calls_allowed()) cuda::free_pinned(staging_);
    staging_ = nullptr;
    pinned_ = false;
  }
  stream_ = nullptr;
  known_ = false;
  sq_.memory = SqMemory::unknown;
}

void SqRecovery::report() {
  drain();
  if (recording())
    record<EventType::gpu_wqe_stats>(uint64_t{sq_.qpn}, uint64_t{page_id_}, int64_t{sq_.gpu}, static_cast<uint64_t>(sq_.memory), recovered_,
                                     wqebbs_, lost_, damaged_, unread_, index_errors_, copies_, batches_, wait_ns_, max_wait_ns_,
                                     uint64_t{g_settings.batch == kWqeBatchSync ? 0 : batch_});
  recovered_ = wqebbs_ = lost_ = damaged_ = unread_ = index_errors_ = copies_ = batches_ = wait_ns_ = max_wait_ns_ = 0;
}

}  // namespace sigmatrace::profiler::doorbell
