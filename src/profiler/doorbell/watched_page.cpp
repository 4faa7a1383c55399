#include "profiler/doorbell/watched_page.h"

#include "mlx5/wqe.hpp"

namespace sigmatrace::profiler::doorbell {

void set_registers(WatchedPage* w, uint32_t reg_offset) {
  auto add = [w](uint32_t off, bool send) {
    for (int i = 0; i < w->register_count; ++i)
      if (w->registers[i].offset == off) return i;
    if (w->register_count == WatchedPage::kMaxRegisters) return -1;
    w->registers[w->register_count] = DoorbellRegister{};
    w->registers[w->register_count].offset = off;
    w->registers[w->register_count].send = send;
    return w->register_count++;
  };
  auto pair = [&](uint32_t off) {
    const int a = add(off, true), b = add(off ^ mlx5::kUarTwinOffset, true);
    if (a >= 0 && b >= 0) w->registers[a].twin = b, w->registers[b].twin = a;
  };
  w->register_count = 0;
  pair(reg_offset & ~7u);  // the mapped register first: doorbells from records go there by default
  for (uint32_t off : mlx5::kUarSendRegisters)
    if (!(off & mlx5::kUarTwinOffset)) pair(off);
  add(mlx5::kUarCqDoorbellOffset, false);
}

// A BlueFlame write is a whole 64-byte WQE copied into the register block, its control segment
// (opcode or size not 0: GPU stacks' 8-byte doorbells carry neither) in the first word. Its body
// is read until it holds still (the writer may still be storing it), with the first word checked
// again after it, so that a new header never goes out with an old body; a body equal to the last
// one forwarded is no BlueFlame (an 8-byte doorbell whose register kept an older copy).
namespace {
constexpr int kSettleLooks = 64;
}  // namespace

bool read_blueflame(const uint64_t* src, uint64_t v, const uint64_t* last_body, uint64_t* body) {
  const mlx5::Doorbell d = mlx5::decode_doorbell(v);
  if (d.opcode == 0 && d.ds == 0) return false;
  for (int k = 1; k < 8; ++k) body[k] = __atomic_load_n(src + k, __ATOMIC_ACQUIRE);
  for (int look = 0; look < kSettleLooks; ++look) {
    bool same = __atomic_load_n(src, __ATOMIC_ACQUIRE) == v;
    for (int k = 1; k < 8; ++k) {
      const uint64_t again = __atomic_load_n(src + k, __ATOMIC_ACQUIRE);
      same &= again == body[k];
      body[k] = again;
    }
    if (same) break;
  }
  bool changed = false;
  for (int k = 1; k < 8; ++k) changed |= body[k] != last_body[k];
  return changed;
}

// One store (and a BlueFlame body before it) to the NIC's register.
void store_real(WatchedPage& w, uint32_t off, uint64_t v, const uint64_t* body) {
  auto* dst = reinterpret_cast<volatile uint64_t*>(w.real + off);
  if (body)  // the whole block, its first word last
    for (int k = 1; k < 8; ++k) dst[k] = body[k];
  *dst = v;
#if defined(__x86_64__)
  __builtin_ia32_sfence();  // out of a write-combining buffer now: a UAR is WC or UC memory
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

// Whether no register of the page holds a value not yet forwarded.
bool page_idle(void* arg) {
  const auto* w = static_cast<const WatchedPage*>(arg);
  for (int i = 0; i < w->register_count; ++i)
    if (__atomic_load_n(reinterpret_cast<const uint64_t*>(w->shadow + w->registers[i].offset), __ATOMIC_ACQUIRE) !=
        w->registers[i].forwarded)
      return false;
  return true;
}

}  // namespace sigmatrace::profiler::doorbell
