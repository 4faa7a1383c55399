// Shared-memory wire: fabric directory, endpoint claim/release, dead-peer reaping, SPSC
// packet rings and futex doorbells. See wire_shm.hpp for the layout.
#include "wire/wire_shm.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/config.hpp"

namespace softnic {

namespace {
constexpr uint64_t kMagic = 0x736f66746e696331ull;  // "softnic1"
constexpr uint32_t kLayoutVersion = 4;  // 4: 128-byte packet headers (masked atomics, DC)
constexpr uint32_t kDefaultRingBytes = 4u << 20;
// A poller that polled this recently is taken to be running (not descheduled).
constexpr uint64_t kPollerFreshNs = 10'000;

long futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* ts) {
  // Shared (non-private) futex: waiter and waker are different processes.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, ts, nullptr, 0);
}

bool pid_alive(int32_t pid) {
  if (pid <= 0) return false;
  return kill(pid, 0) == 0 || errno == EPERM;
}

// Serialises join/leave of all processes of one fabric. The last process to leave removes
// the lock file, so a waiter re-checks after locking that it holds the file that is still
// linked under the name, and retries otherwise.
class FabricLock {
 public:
  explicit FabricLock(const std::string& fabric) {
    snprintf(path_, sizeof(path_), "/dev/shm/softnic-%s.lock", fabric.c_str());
    for (int attempt = 0; attempt < 100; ++attempt) {
      fd_ = open(path_, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd_ < 0) return;
      flock(fd_, LOCK_EX);
      struct stat held, named;
      if (fstat(fd_, &held) == 0 && stat(path_, &named) == 0 && held.st_ino == named.st_ino &&
          held.st_dev == named.st_dev)
        return;
      close(fd_);
      fd_ = -1;
    }
  }
  ~FabricLock() {
    if (fd_ >= 0) close(fd_);  // releases the flock
  }
  bool ok() const { return fd_ >= 0; }
  void remove_file() { unlink(path_); }  // only while holding the lock

 private:
  int fd_ = -1;
  char path_[128];
};
}  // namespace

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

void Wire::segment_name(char* out, size_t n, const char* fabric, int slot, uint32_t gen) {
  snprintf(out, n, "/softnic-%s-ep%d-g%u", fabric, slot, gen);
}

size_t Wire::segment_bytes() const {
  return size_t(kMaxEndpoints) * (sizeof(RingCtl) + ring_bytes_);
}
RingCtl* Wire::ring_ctl(uint8_t* seg, int dst) {
  return reinterpret_cast<RingCtl*>(seg + size_t(dst) * sizeof(RingCtl));
}
uint8_t* Wire::ring_data(uint8_t* seg, int dst) {
  return seg + size_t(kMaxEndpoints) * sizeof(RingCtl) + size_t(dst) * ring_bytes_;
}

void Wire::reap_dead_locked() {
  const std::string& fab = config().fabric;
  for (int s = 0; s < kMaxEndpoints; ++s) {
    EndpointSlot& e = dir_->slots[s];
    int32_t pid = e.pid.load();
    if (pid != 0 && !pid_alive(pid)) {
      char name[128];
      segment_name(name, sizeof(name), fab.c_str(), s, e.gen.load());
      shm_unlink(name);  // the crashed process could not do it itself
      e.senders.store(0);
      e.pid.store(0);
    }
  }
}

bool Wire::join() {
  const Config& cfg = config();
  FabricLock lock(cfg.fabric);
  if (!lock.ok()) return false;
  char name[128];
  snprintf(name, sizeof(name), "/softnic-%s", cfg.fabric.c_str());
  int fd = shm_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  struct stat st;
  fstat(fd, &st);
  bool fresh = st.st_size == 0;
  if (fresh && ftruncate(fd, sizeof(Directory)) != 0) {
    close(fd);
    return false;
  }
  void* p = mmap(nullptr, sizeof(Directory), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return false;
  auto* dir = static_cast<Directory*>(p);
  if (fresh) {
    dir->layout_version = kLayoutVersion;
    dir->ring_bytes = kDefaultRingBytes;
    if (const char* v = getenv("SOFTNIC_RING_KB")) {
      unsigned long kb = strtoul(v, nullptr, 10);
      if (kb >= 64 && kb <= (1u << 20)) dir->ring_bytes = uint32_t(kb << 10);
    }
    dir->magic = kMagic;
  } else if (dir->magic != kMagic || dir->layout_version != kLayoutVersion) {
    munmap(p, sizeof(Directory));
    errno = EPROTO;
    return false;
  }
  dir_ = dir;
  ring_bytes_ = dir->ring_bytes;
  reap_dead_locked();
  for (int s = 0; s < kMaxEndpoints; ++s) {
    int32_t expected = 0;
    if (dir->slots[s].pid.compare_exchange_strong(expected, getpid())) {
      slot_ = s;
      break;
    }
  }
  if (slot_ < 0) {
    munmap(p, sizeof(Directory));
    dir_ = nullptr;
    errno = ENOSPC;
    return false;
  }
  EndpointSlot& me = dir->slots[slot_];
  gen_ = me.gen.fetch_add(1) + 1;
  me.senders.store(0);
  me.sleeping.store(0);
  me.app_polling.store(0);
  me.app_poll_ns.store(0);
  snprintf(me.host, sizeof(me.host), "%s", cfg.host.c_str());

  segment_name(name, sizeof(name), cfg.fabric.c_str(), slot_, gen_);
  fd = shm_open(name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, segment_bytes()) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    me.pid.store(0);
    munmap(p, sizeof(Directory));
    dir_ = nullptr;
    errno = e;
    return false;
  }
  void* seg = mmap(nullptr, segment_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (seg == MAP_FAILED) {
    shm_unlink(name);
    me.pid.store(0);
    munmap(p, sizeof(Directory));
    dir_ = nullptr;
    return false;
  }
  my_seg_ = static_cast<uint8_t*>(seg);
  dir->epoch.fetch_add(1);
  SOFTNIC_LOG("joined fabric %s as endpoint %d gen %u", cfg.fabric.c_str(), slot_, gen_);
  return true;
}

void Wire::leave() {
  if (!dir_) return;
  const Config& cfg = config();
  FabricLock lock(cfg.fabric);
  char name[128];
  segment_name(name, sizeof(name), cfg.fabric.c_str(), slot_, gen_);
  shm_unlink(name);
  munmap(my_seg_, segment_bytes());
  for (int s = 0; s < kMaxEndpoints; ++s)
    if (peers_[s].base) munmap(peers_[s].base, segment_bytes());
  EndpointSlot& me = dir_->slots[slot_];
  me.senders.store(0);
  me.pid.store(0);
  dir_->epoch.fetch_add(1);
  // Other endpoints forget our ring bit lazily; clear it eagerly where we can.
  for (int s = 0; s < kMaxEndpoints; ++s)
    dir_->slots[s].senders.fetch_and(~(1ull << slot_));
  reap_dead_locked();
  bool anyone = false;
  for (int s = 0; s < kMaxEndpoints; ++s) anyone |= dir_->slots[s].pid.load() != 0;
  munmap(dir_, sizeof(Directory));
  dir_ = nullptr;
  if (!anyone) {
    snprintf(name, sizeof(name), "/softnic-%s", cfg.fabric.c_str());
    shm_unlink(name);
    lock.remove_file();
  }
}

bool Wire::peer_alive(int s, uint32_t gen_bits) {
  if (s < 0 || s >= kMaxEndpoints) return false;
  EndpointSlot& e = dir_->slots[s];
  int32_t pid = e.pid.load(std::memory_order_acquire);
  if (pid == 0 || (e.gen.load() & 3) != gen_bits) return false;
  return pid == getpid() || pid_alive(pid);
}

bool Wire::pending_from(int s) {
  if (s < 0 || s >= kMaxEndpoints || !peers_[s].base) return false;
  RingCtl* rc = ring_ctl(peers_[s].base, slot_);
  return rc->dst_gen.load(std::memory_order_acquire) == gen_ &&
         rc->head.load(std::memory_order_relaxed) != rc->tail.load(std::memory_order_acquire);
}

void Wire::refresh_peers() {
  EndpointSlot& me = dir_->slots[slot_];
  // What this refresh acts on is what it records as seen: a sender that sets its bit while we
  // map (or an endpoint that joins meanwhile) must trigger the next refresh, or its ring would
  // never be read and its packets wait forever (seen as a rare hang right after connecting).
  const uint32_t epoch = dir_->epoch.load(std::memory_order_acquire);
  uint64_t senders = me.senders.load(std::memory_order_acquire);
  const std::string& fab = config().fabric;
  for (int s = 0; s < kMaxEndpoints; ++s) {
    PeerMap& p = peers_[s];
    bool want = senders & (1ull << s);
    uint32_t g = dir_->slots[s].gen.load(std::memory_order_acquire);
    bool live = want && dir_->slots[s].pid.load() != 0;
    if (p.base && (!live || p.gen != g)) {
      // Packets already on the wire still arrive after their sender has left: drain first.
      RingCtl* rc = ring_ctl(p.base, slot_);
      if (rc->dst_gen.load() == gen_ && rc->head.load() != rc->tail.load(std::memory_order_acquire))
        continue;
      if (s != slot_) munmap(p.base, segment_bytes());
      p.base = nullptr;
      mapped_mask_ &= ~(1ull << s);
    }
    if (live && !p.base) {
      if (s == slot_) {
        p.base = my_seg_;  // loopback: our own outbound ring to ourselves
      } else {
        char name[128];
        segment_name(name, sizeof(name), fab.c_str(), s, g);
        int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0) continue;
        void* m = mmap(nullptr, segment_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (m == MAP_FAILED) continue;
        p.base = static_cast<uint8_t*>(m);
      }
      p.gen = g;
      mapped_mask_ |= 1ull << s;
    }
  }
  // Bits of endpoints that are gone stay cleared so we stop re-trying them.
  if (uint64_t stale = senders & ~mapped_mask_) {
    me.senders.fetch_and(~stale);
    senders &= ~stale;
  }
  seen_senders_ = senders;
  seen_epoch_ = epoch;
}

PacketHeader* Wire::reserve(int dst, uint32_t payload_len) {
  RingCtl* rc = ring_ctl(my_seg_, dst);
  uint32_t dgen = dir_->slots[dst].gen.load(std::memory_order_acquire);
  if (rc->dst_gen.load(std::memory_order_relaxed) != dgen) {
    // New consumer incarnation: whatever was left for the previous one is dropped.
    rc->dst_gen.store(0, std::memory_order_release);
    rc->head.store(0, std::memory_order_relaxed);
    rc->tail.store(0, std::memory_order_relaxed);
    rc->dst_gen.store(dgen, std::memory_order_release);
  }
  if (!(dir_->slots[dst].senders.load(std::memory_order_relaxed) & (1ull << slot_)))
    dir_->slots[dst].senders.fetch_or(1ull << slot_);
  uint32_t need = (uint32_t(sizeof(PacketHeader)) + payload_len + 63u) & ~63u;
  if (need > ring_bytes_ / 2) return nullptr;  // callers segment to well below this
  uint64_t tail = rc->tail.load(std::memory_order_relaxed);
  uint64_t head = rc->head.load(std::memory_order_acquire);
  uint64_t off = tail % ring_bytes_;
  uint64_t pad = (off + need > ring_bytes_) ? ring_bytes_ - off : 0;
  if (tail + pad + need - head > ring_bytes_) return nullptr;
  uint8_t* data = ring_data(my_seg_, dst);
  if (pad) {
    auto* ph = reinterpret_cast<PacketHeader*>(data + off);
    ph->record_bytes = uint32_t(pad);
    ph->op = WireOp::Pad;
    tail += pad;
    rc->tail.store(tail, std::memory_order_release);
    off = 0;
  }
  auto* h = reinterpret_cast<PacketHeader*>(data + off);
  h->record_bytes = need;
  return h;
}

void Wire::commit(int dst, PacketHeader* h) {
  RingCtl* rc = ring_ctl(my_seg_, dst);
  rc->tail.store(rc->tail.load(std::memory_order_relaxed) + h->record_bytes,
                 std::memory_order_release);
  pending_wake_ |= 1ull << dst;
}

void Wire::flush_doorbells() {
  if (!pending_wake_) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (uint64_t m = pending_wake_; m; m &= m - 1) {
    EndpointSlot& e = dir_->slots[__builtin_ctzll(m)];
    if (!e.sleeping.load(std::memory_order_seq_cst)) continue;
    if (e.app_polling.load(std::memory_order_seq_cst) &&
        now_ns() - e.app_poll_ns.load(std::memory_order_relaxed) < kPollerFreshNs)
      continue;  // an application thread of that process is polling right now
    e.doorbell.fetch_add(1, std::memory_order_seq_cst);
    futex(&e.doorbell, FUTEX_WAKE, 1, nullptr);
  }
  pending_wake_ = 0;
}

void Wire::set_sleeping(bool s) {
  dir_->slots[slot_].sleeping.store(s ? 1 : 0, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void Wire::kick_self() {
  EndpointSlot& e = dir_->slots[slot_];
  e.doorbell.fetch_add(1, std::memory_order_seq_cst);
  if (e.sleeping.load(std::memory_order_seq_cst)) futex(&e.doorbell, FUTEX_WAKE, 1, nullptr);
}

void Wire::wait(uint32_t seen, int timeout_us) {
  timespec ts{timeout_us / 1000000, (timeout_us % 1000000) * 1000L};
  futex(&dir_->slots[slot_].doorbell, FUTEX_WAIT, seen, timeout_us >= 0 ? &ts : nullptr);
}

}  // namespace softnic
