// The shared-memory "wire": a per-fabric directory of endpoints (one per process) and, per
// process, a segment of outbound single-producer/single-consumer packet rings, one per
// destination endpoint. Doorbells are cross-process futexes in the directory.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "core/packet.hpp"

namespace softnic {

uint64_t now_ns();

constexpr int kMaxEndpoints = 64;

struct alignas(64) EndpointSlot {
  std::atomic<int32_t> pid;        // 0: free
  std::atomic<uint32_t> gen;       // bumped on every claim; part of segment names and QPNs
  std::atomic<uint32_t> doorbell;  // futex word, bumped by every producer
  std::atomic<uint32_t> sleeping;  // engine is (about to be) blocked on doorbell
  std::atomic<uint64_t> senders;   // bit s: endpoint s has a ring towards this endpoint
  // An application thread is in a poll_cq loop that has not found a completion yet, and
  // when it last polled: a thread that polled within the last few microseconds drains the
  // rings itself, so producers need not wake the engine thread. A poller that has been
  // descheduled stops refreshing the time and then gets its engine woken again.
  std::atomic<uint32_t> app_polling;
  std::atomic<uint64_t> app_poll_ns;
  char host[48];
};

struct Directory {
  uint64_t magic;
  uint32_t layout_version;
  uint32_t ring_bytes;
  std::atomic<uint32_t> epoch;  // bumped on every join and leave: peers re-check mappings
  EndpointSlot slots[kMaxEndpoints];
};

struct alignas(64) RingCtl {
  std::atomic<uint64_t> tail;  // producer
  char pad0[56];
  std::atomic<uint64_t> head;  // consumer
  char pad1[56];
  std::atomic<uint32_t> dst_gen;  // generation of the consumer this ring currently serves
  char pad2[60];
};

class Wire {
 public:
  // Joins the fabric (claims an endpoint slot). Returns false with errno set on failure.
  bool join();
  void leave();
  bool joined() const { return dir_ != nullptr; }
  // In a forked child: the endpoint belongs to the parent; forget it without touching it.
  void forget() { *this = Wire(); }

  int slot() const { return slot_; }
  uint32_t gen() const { return gen_; }
  EndpointSlot& endpoint(int s) { return dir_->slots[s]; }

  // Is endpoint s alive and still the incarnation with generation bits gen_bits?
  bool peer_alive(int s, uint32_t gen_bits);
  // Are packets from endpoint s still waiting in its ring towards us?
  bool pending_from(int s);

  // Producer side: room for a packet with payload_len bytes towards dst, or nullptr if full.
  PacketHeader* reserve(int dst, uint32_t payload_len);
  void commit(int dst, PacketHeader* h);  // publishes; doorbell rung by flush_doorbells()
  void flush_doorbells();                 // wake consumers that got packets since last flush

  // Consumer side: hands each pending packet to fn(src_endpoint, header); returns count.
  template <class Fn>
  int poll(Fn&& fn, int budget);

  // Blocks the calling engine thread until a doorbell or timeout.
  void wait(uint32_t seen_doorbell, int timeout_us);
  uint32_t doorbell_value() { return dir_->slots[slot_].doorbell.load(std::memory_order_acquire); }
  void set_sleeping(bool s);
  void kick_self();
  void set_app_polling(bool on) {
    EndpointSlot& e = dir_->slots[slot_];
    if (on) e.app_poll_ns.store(now_ns(), std::memory_order_relaxed);
    if (e.app_polling.load(std::memory_order_relaxed) != uint32_t(on))
      e.app_polling.store(on, std::memory_order_seq_cst);
  }
  bool app_polling() { return dir_->slots[slot_].app_polling.load(std::memory_order_relaxed); }

 private:
  struct PeerMap {
    uint32_t gen = 0;
    uint8_t* base = nullptr;
  };
  RingCtl* ring_ctl(uint8_t* seg, int dst);
  uint8_t* ring_data(uint8_t* seg, int dst);
  size_t segment_bytes() const;
  void refresh_peers();
  void reap_dead_locked();
  static void segment_name(char* out, size_t n, const char* fabric, int slot, uint32_t gen);

  Directory* dir_ = nullptr;
  uint8_t* my_seg_ = nullptr;
  int slot_ = -1;
  uint32_t gen_ = 0;
  uint32_t ring_bytes_ = 0;
  uint64_t pending_wake_ = 0;  // destinations with newly committed packets
  uint64_t mapped_mask_ = 0;
  uint64_t seen_senders_ = 0;  // senders word at the last refresh
  uint32_t seen_epoch_ = 0;
  PeerMap peers_[kMaxEndpoints];
};

template <class Fn>
int Wire::poll(Fn&& fn, int budget) {
  uint64_t senders = dir_->slots[slot_].senders.load(std::memory_order_acquire);
  if (senders != seen_senders_ || (senders & mapped_mask_) != mapped_mask_ ||
      dir_->epoch.load(std::memory_order_relaxed) != seen_epoch_)
    refresh_peers();
  int n = 0;
  for (uint64_t m = mapped_mask_; m && n < budget; m &= m - 1) {
    int s = __builtin_ctzll(m);
    PeerMap& p = peers_[s];
    RingCtl* rc = ring_ctl(p.base, slot_);
    if (rc->dst_gen.load(std::memory_order_acquire) != gen_) continue;
    uint8_t* data = ring_data(p.base, slot_);
    uint64_t head = rc->head.load(std::memory_order_relaxed);
    uint64_t tail = rc->tail.load(std::memory_order_acquire);
    while (head != tail && n < budget) {
      auto* h = reinterpret_cast<PacketHeader*>(data + (head % ring_bytes_));
      uint32_t rb = h->record_bytes;
      if (h->op != WireOp::Pad) {
        fn(s, h);
        ++n;
      }
      head += rb;
      rc->head.store(head, std::memory_order_release);
    }
  }
  return n;
}

}  // namespace softnic
