// Every layer's associator (layer_associator.h), in one place. Adding a layer: its associator's
// file defines its registration, and one line here names it.
#pragma once
#include "analysis/layer_associator.h"

namespace sigmatrace::analysis {

extern const AssociatorRegistration kIbvAssociator;     // ibv_ops.cpp: work requests, completions, verbs calls
extern const AssociatorRegistration kGpuAssociator;     // gpu_ops.cpp: doorbells, recovered WQEs, kernels, devx
extern const AssociatorRegistration kUcxOfiAssociator;  // layer_ops.cpp: UCX and libfabric operations

inline constexpr const AssociatorRegistration* kAssociators[] = {&kIbvAssociator, &kGpuAssociator, &kUcxOfiAssociator};

}  // namespace sigmatrace::analysis
