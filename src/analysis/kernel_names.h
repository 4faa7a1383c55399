// A GPU kernel's name as a person reads it: the symbol the driver reports is mangled, often behind
// nvcc's prefix for kernels of internal linkage ("__nv_static_32__<hash>_<n>_<file>__Z..."), and its
// parameter list makes labels too long for a figure.
#pragma once
#include <string>

namespace sigmatrace::analysis {

// "(anonymous namespace)::exchange_kernel" → "exchange_kernel"; templates kept
// ("barrier_on_stream_kernel_threadgroup<(threadgroup_t)1>"); a name that is not a mangled C++
// symbol (extern "C" kernels) is returned as it is.
std::string readable_kernel_name(const std::string& symbol);

}  // namespace sigmatrace::analysis
