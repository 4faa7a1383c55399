// Registered memory regions: key allocation, lkey/rkey lookup with bounds and access
// checks, and the copy primitives the engine uses (host memory, or GPU memory via the CUDA
// driver when it is present at run time).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/objects.hpp"

namespace softnic {

uint32_t mr_register(Mr* mr);  // returns the key (lkey == rkey); 0 if the table is full
void mr_unregister(Mr* mr);
Mr* mr_lookup(uint32_t key);

// Does [addr, addr+len) lie inside mr?
inline bool mr_covers(const Mr* mr, uint64_t addr, uint64_t len) {
  uint64_t base = reinterpret_cast<uint64_t>(mr->mr.addr);
  return addr >= base && len <= mr->mr.length && addr - base <= mr->mr.length - len;
}

// Copies between registered memory and host buffers, honouring GPU-resident regions. false when
// the CUDA driver failed the copy (it printed why). A GPU copy has landed when the call returns,
// as a NIC places a WRITE's data before it acknowledges it.
bool mem_write(const Mr* mr, uint64_t addr, const void* src, size_t len);
bool mem_read(const Mr* mr, uint64_t addr, void* dst, size_t len);

}  // namespace softnic
