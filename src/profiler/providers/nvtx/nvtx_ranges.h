// What the NVTX provider's two modules share (nvtx_injection.cpp defines it): the ranges and marks
// as the core functions record them, for the payload extension's variants (nvtx_payloads.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "profiler/providers/nvtx/nvtx_abi.h"

namespace sigmatrace::profiler::nvtx {

// Whether NVTX calls are recorded now (the provider active, not aggregate mode).
bool recording_ranges();
// attributes or, without them, the message text; then the extended payloads, if any.
int push(const void* domain, const EventAttributes* a, const char* text, size_t len, const PayloadData* data = nullptr,
         size_t count = 0);
int pop(const void* domain);
uint64_t start(const void* domain, const EventAttributes* a, const char* text, size_t len, const PayloadData* data = nullptr,
               size_t count = 0);
void end_range(const void* domain, uint64_t id);
void mark(const void* domain, const EventAttributes* a, const char* text, size_t len, const PayloadData* data = nullptr,
          size_t count = 0);

}  // namespace sigmatrace::profiler::nvtx
