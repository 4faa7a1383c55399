// The few UCX 1.x ABI facts the ucx provider needs, declared here so that the provider builds
// without UCX's headers (the GPU build machines have none) and libsigmatrace.so never links UCX.
// Written from the documented public ABI of ucp/api/ucp.h, ucp_def.h, uct/api/uct.h and
// uct/api/tl.h (UCX 1.13, x86-64); these layouts have been stable since UCX 1.10. Offsets are
// checked against the installed headers by tests/ucx_ofi/ucx_ofi_abi_test.cpp where they exist.
// Only what is read or written is declared: every struct below is a prefix of the real one.
#pragma once
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

namespace sigmatrace::profiler::ucx::abi {

using ucs_status_t = int;          // enum ucs_status_t (int-sized)
using ucs_status_ptr_t = void*;
using ucp_tag_t = uint64_t;
using ucp_datatype_t = uint64_t;
using ucp_ep_h = void*;
using ucp_worker_h = void*;
using ucp_context_h = void*;
using ucp_mem_h = void*;
using ucp_rkey_h = void*;

constexpr ucs_status_t UCS_OK = 0;
constexpr ucs_status_t UCS_INPROGRESS = 1;
constexpr ucs_status_t UCS_ERR_NO_MEMORY = -4;
constexpr intptr_t UCS_ERR_LAST = -100;
inline bool ptr_is_err(const void* p) { return reinterpret_cast<uintptr_t>(p) >= static_cast<uintptr_t>(UCS_ERR_LAST); }
inline bool ptr_is_ptr(const void* p) { return reinterpret_cast<uintptr_t>(p) - 1 < static_cast<uintptr_t>(UCS_ERR_LAST) - 1; }
// The status a ucs_status_ptr_t stands for: OK (null), an error, or INPROGRESS (a request).
inline ucs_status_t ptr_status(const void* p) {
  if (!p) return UCS_OK;
  if (ptr_is_err(p)) return static_cast<ucs_status_t>(reinterpret_cast<intptr_t>(p));
  return UCS_INPROGRESS;
}

// ucp_datatype_t classes (low 3 bits); contiguous: element size << 3.
constexpr uint64_t UCP_DATATYPE_CONTIG = 0, UCP_DATATYPE_IOV = 2, UCP_DATATYPE_CLASS_MASK = 7;
constexpr unsigned UCP_DATATYPE_SHIFT = 3;
struct ucp_dt_iov {
  void* buffer;
  size_t length;
};

// ucp_request_param_t (72 bytes).
constexpr uint32_t UCP_OP_ATTR_FIELD_DATATYPE = 1u << 3;
struct ucp_request_param {
  uint32_t op_attr_mask;
  uint32_t flags;
  void* request;
  void* cb;
  ucp_datatype_t datatype;  // offset 24
  void* user_data;
  void* reply_buffer;
  int memory_type;
  uint64_t recv_info;
  ucp_mem_h memh;           // offset 64
};
static_assert(offsetof(ucp_request_param, datatype) == 24 && offsetof(ucp_request_param, memh) == 64);

// ucp_ep_params_t (prefix).
constexpr uint64_t UCP_EP_PARAM_FIELD_REMOTE_ADDRESS = 1u << 0, UCP_EP_PARAM_FIELD_SOCK_ADDR = 1u << 4,
                   UCP_EP_PARAM_FIELD_CONN_REQUEST = 1u << 6;
struct ucs_sock_addr {
  const sockaddr* addr;
  socklen_t addrlen;
};
struct ucp_ep_params {
  uint64_t field_mask;
  const void* address;        // 8
  int err_mode;               // 16
  void* err_handler_cb;       // 24
  void* err_handler_arg;      // 32
  void* user_data;            // 40
  unsigned flags;             // 48
  ucs_sock_addr sockaddr;     // 56
  void* conn_request;         // 72
};
static_assert(offsetof(ucp_ep_params, sockaddr) == 56 && offsetof(ucp_ep_params, conn_request) == 72);

// ucp_mem_attr_t, for ucp_mem_query().
constexpr uint64_t UCP_MEM_ATTR_FIELD_ADDRESS = 1, UCP_MEM_ATTR_FIELD_LENGTH = 2, UCP_MEM_ATTR_FIELD_MEM_TYPE = 4;
struct ucp_mem_attr {
  uint64_t field_mask;
  void* address;
  size_t length;
  int mem_type;
};

// ucp_worker_attr_t (80 bytes), for ucp_worker_query(ADDRESS).
constexpr uint64_t UCP_WORKER_ATTR_FIELD_ADDRESS = 1u << 1;
struct ucp_worker_attr {
  uint64_t field_mask;
  int thread_mode;
  uint32_t address_flags;
  void* address;          // 16
  size_t address_length;  // 24
  uint8_t rest[48];
};
static_assert(sizeof(ucp_worker_attr) == 80);

struct ucp_tag_recv_info {
  ucp_tag_t sender_tag;
  size_t length;
};

// Active messages: ucp_worker_set_am_recv_handler(ucp_am_handler_param_t).
constexpr uint64_t UCP_AM_HANDLER_PARAM_FIELD_ID = 1, UCP_AM_HANDLER_PARAM_FIELD_CB = 4, UCP_AM_HANDLER_PARAM_FIELD_ARG = 8;
struct ucp_am_recv_param {
  uint64_t recv_attr;
  ucp_ep_h reply_ep;
};
using ucp_am_recv_callback_t = ucs_status_t (*)(void* arg, const void* header, size_t header_length, void* data, size_t length,
                                                const ucp_am_recv_param* param);
using ucp_am_callback_t = ucs_status_t (*)(void* arg, void* data, size_t length, ucp_ep_h reply_ep, unsigned flags);
struct ucp_am_handler_param {
  uint64_t field_mask;
  unsigned id;
  uint32_t flags;
  ucp_am_recv_callback_t cb;  // 16
  void* arg;                  // 24
};
static_assert(offsetof(ucp_am_handler_param, cb) == 16 && offsetof(ucp_am_handler_param, arg) == 24);

// ---- UCT ---------------------------------------------------------------------------------------
using uct_iface_h = struct uct_iface*;
using uct_ep_h = struct uct_ep*;
using uct_rkey_t = uint64_t;
using uct_tag_t = uint64_t;
using uct_pack_callback_t = size_t (*)(void* dest, void* arg);
using uct_unpack_callback_t = void (*)(void* arg, const void* data, size_t length);
struct uct_completion;
struct uct_iov {
  void* buffer;
  size_t length;
  void* memh;
  size_t stride;
  unsigned count;
};
inline uint64_t iov_bytes(const uct_iov* iov, size_t n) {
  uint64_t b = 0;
  for (size_t i = 0; i < n; ++i) b += uint64_t{iov[i].length} * (iov[i].count ? iov[i].count : 1);
  return b;
}

// uct_iface_ops_t: the first 20 entries (the data path) are typed; the table is 50 pointers.
struct uct_iface_ops {
  ucs_status_t (*ep_put_short)(uct_ep_h, const void*, unsigned, uint64_t, uct_rkey_t);
  ssize_t (*ep_put_bcopy)(uct_ep_h, uct_pack_callback_t, void*, uint64_t, uct_rkey_t);
  ucs_status_t (*ep_put_zcopy)(uct_ep_h, const uct_iov*, size_t, uint64_t, uct_rkey_t, uct_completion*);
  ucs_status_t (*ep_get_short)(uct_ep_h, void*, unsigned, uint64_t, uct_rkey_t);
  ucs_status_t (*ep_get_bcopy)(uct_ep_h, uct_unpack_callback_t, void*, size_t, uint64_t, uct_rkey_t, uct_completion*);
  ucs_status_t (*ep_get_zcopy)(uct_ep_h, const uct_iov*, size_t, uint64_t, uct_rkey_t, uct_completion*);
  ucs_status_t (*ep_am_short)(uct_ep_h, uint8_t, uint64_t, const void*, unsigned);
  ucs_status_t (*ep_am_short_iov)(uct_ep_h, uint8_t, const uct_iov*, size_t);
  ssize_t (*ep_am_bcopy)(uct_ep_h, uint8_t, uct_pack_callback_t, void*, unsigned);
  ucs_status_t (*ep_am_zcopy)(uct_ep_h, uint8_t, const void*, unsigned, const uct_iov*, size_t, unsigned, uct_completion*);
  ucs_status_t (*ep_atomic_cswap64)(uct_ep_h, uint64_t, uint64_t, uint64_t, uct_rkey_t, uint64_t*, uct_completion*);
  ucs_status_t (*ep_atomic_cswap32)(uct_ep_h, uint32_t, uint32_t, uint64_t, uct_rkey_t, uint32_t*, uct_completion*);
  ucs_status_t (*ep_atomic32_post)(uct_ep_h, unsigned, uint32_t, uint64_t, uct_rkey_t);
  ucs_status_t (*ep_atomic64_post)(uct_ep_h, unsigned, uint64_t, uint64_t, uct_rkey_t);
  ucs_status_t (*ep_atomic32_fetch)(uct_ep_h, unsigned, uint32_t, uint32_t*, uint64_t, uct_rkey_t, uct_completion*);
  ucs_status_t (*ep_atomic64_fetch)(uct_ep_h, unsigned, uint64_t, uint64_t*, uint64_t, uct_rkey_t, uct_completion*);
  ucs_status_t (*ep_tag_eager_short)(uct_ep_h, uct_tag_t, const void*, size_t);
  ssize_t (*ep_tag_eager_bcopy)(uct_ep_h, uct_tag_t, uint64_t, uct_pack_callback_t, void*, unsigned);
  ucs_status_t (*ep_tag_eager_zcopy)(uct_ep_h, uct_tag_t, uint64_t, const uct_iov*, size_t, unsigned, uct_completion*);
  ucs_status_ptr_t (*ep_tag_rndv_zcopy)(uct_ep_h, uct_tag_t, const void*, unsigned, const uct_iov*, size_t, unsigned,
                                        uct_completion*);
  void* rest[30];  // ep_tag_rndv_cancel ... iface_is_reachable
};
static_assert(sizeof(uct_iface_ops) == 400);

// struct uct_iface { uct_iface_ops_t ops; }  struct uct_ep { uct_iface_h iface; }
struct uct_iface {
  uct_iface_ops ops;
};
struct uct_ep {
  uct_iface_h iface;
};

// uct_iface_params_t (prefix): the device a transport interface is opened on.
constexpr uint64_t UCT_IFACE_PARAM_FIELD_OPEN_MODE = 1u << 1;
constexpr uint64_t UCT_IFACE_OPEN_MODE_DEVICE = 1;
struct uct_iface_params {
  uint64_t field_mask;
  uint64_t cpu_mask[16];  // ucs_cpu_set_t: 1024 bits
  uint64_t open_mode;     // 136
  const char* tl_name;    // 144
  const char* dev_name;   // 152
};
static_assert(offsetof(uct_iface_params, open_mode) == 136 && offsetof(uct_iface_params, tl_name) == 144);

// uct_ep_params_t (prefix).
constexpr uint64_t UCT_EP_PARAM_FIELD_IFACE = 1;
struct uct_ep_params {
  uint64_t field_mask;
  uct_iface_h iface;
};

}  // namespace sigmatrace::profiler::ucx::abi
