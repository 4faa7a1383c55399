// The emulated devices of this process's host: names, GUIDs, LIDs, GIDs and the attributes
// ibv_query_device/_ex and ibv_query_port report.
#pragma once
#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

namespace softnic {

struct Device {
  ibv_device ibdev;  // must stay first: applications get &ibdev
  int index;
  uint64_t node_guid;  // host order
  uint16_t lid;
};

// All devices of the emulated host (SOFTNIC_DEVICES of them), created once.
const std::vector<Device*>& devices();
Device* to_device(ibv_device* d);  // nullptr if d is not one of ours

void fill_device_attr(const Device* d, ibv_device_attr* a);
void fill_device_attr_ex(const Device* d, ibv_device_attr_ex* a, size_t size);
void fill_port_attr(const Device* d, ibv_port_attr* a);
void device_gid(const Device* d, ibv_gid* gid);

constexpr uint32_t kMaxQpWr = 32768;
constexpr uint32_t kMaxSge = 30;
constexpr uint32_t kMaxCqe = (1u << 22) - 1;
constexpr uint32_t kMaxInline = 1024;
constexpr uint32_t kMaxRdAtomic = 16;
constexpr uint32_t kMaxSrqWr = 32767;
constexpr uint32_t kMaxMsgSize = 1u << 30;
constexpr int kPortCount = 1;
constexpr uint16_t kPkeyDefault = 0xffff;

}  // namespace softnic
