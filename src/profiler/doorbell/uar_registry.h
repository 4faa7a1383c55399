// The NIC doorbell pages (devx UARs) of this process, as mlx5dv_devx_alloc_uar returned them.
// The devx provider adds and removes them; the CUDA side asks whether a range the application
// registers with the GPU lies inside one, which is what makes a page a candidate for the
// doorbell hijack (no other page is ever touched).
//
// Control path only (allocation, registration): a small table under a mutex.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sigmatrace::profiler::doorbell {

struct UarPage {
  uintptr_t uar = 0;        // the mlx5dv_devx_uar handle
  uintptr_t context = 0;    // its ibv_context
  uintptr_t base = 0;       // mapped page (base_addr)
  uintptr_t reg = 0;        // doorbell register (reg_addr)
  uint32_t page_id = 0;
  uint32_t alloc_type = 0;  // mlx5dv_devx_alloc_uar flags
};

// A UAR mapping is one 4 KiB page (mlx5's UAR page size with uar_4k, which devx UARs use).
constexpr size_t kUarMappingBytes = 4096;

void add_uar(const UarPage& page);
void remove_uar(uintptr_t uar);
// The UAR whose page contains [addr, addr + len) (len 0: just addr); false if none.
bool find_uar(uintptr_t addr, size_t len, UarPage* out);

}  // namespace sigmatrace::profiler::doorbell
