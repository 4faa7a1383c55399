// The libfabric 1.x ABI the ofi provider needs, declared here so that the provider builds without
// libfabric's headers and libsigmatrace.so never links libfabric. Written from the documented ABI
// of rdma/fabric.h, fi_domain.h, fi_endpoint.h, fi_eq.h, fi_cm.h, fi_rma.h, fi_tagged.h and
// fi_atomic.h (FABRIC_1.3 / libfabric 1.17, x86-64). Every ops table starts with its size in
// bytes, so a provider built against an older table is recognised and its missing entries left
// alone. Checked against the installed headers by tests/ucx_ofi/ucx_ofi_abi_test.cpp.
#pragma once
#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace sigmatrace::profiler::ofi::abi {

using fi_addr_t = uint64_t;
struct fid_ep;
struct fid_cq;
struct fid_av;
struct fid_eq;
struct fid_cntr;
struct fid_mr;
struct fid_pep;
struct fid_domain;
struct fid_fabric;

constexpr ssize_t kFiEagain = 11;
constexpr ssize_t kFiEavail = 259;
// enum fi_addr_format values whose address length the format itself fixes or marks.
constexpr uint32_t FI_SOCKADDR_IN = 2, FI_SOCKADDR_IN6 = 3, FI_ADDR_STR = 9;

struct fid {
  size_t fclass;
  void* context;
  void* ops;  // struct fi_ops*: close/bind/control (not wrapped)
};

struct fi_fabric_attr {
  fid_fabric* fabric;
  char* name;
  char* prov_name;
  uint32_t prov_version;
  uint32_t api_version;
};
struct fi_domain_attr {
  fid_domain* domain;
  char* name;
};
struct fi_ep_attr {
  int type;  // enum fi_ep_type: FI_EP_MSG 1, FI_EP_DGRAM 2, FI_EP_RDM 3
};
struct fi_info {
  fi_info* next;
  uint64_t caps;
  uint64_t mode;
  uint32_t addr_format;
  size_t src_addrlen;   // 32
  size_t dest_addrlen;  // 40
  void* src_addr;
  void* dest_addr;
  void* handle;
  void* tx_attr;
  void* rx_attr;
  fi_ep_attr* ep_attr;          // 88
  fi_domain_attr* domain_attr;  // 96
  fi_fabric_attr* fabric_attr;  // 104
};
static_assert(offsetof(fi_info, ep_attr) == 88 && offsetof(fi_info, fabric_attr) == 104);

struct fi_msg {
  const iovec* msg_iov;
  void** desc;
  size_t iov_count;
  fi_addr_t addr;
  void* context;
  uint64_t data;
};
struct fi_msg_tagged {
  const iovec* msg_iov;
  void** desc;
  size_t iov_count;
  fi_addr_t addr;
  uint64_t tag;
  uint64_t ignore;
  void* context;
  uint64_t data;
};
struct fi_rma_iov {
  uint64_t addr;
  size_t len;
  uint64_t key;
};
struct fi_msg_rma {
  const iovec* msg_iov;
  void** desc;
  size_t iov_count;
  fi_addr_t addr;
  const fi_rma_iov* rma_iov;
  size_t rma_iov_count;
  void* context;
  uint64_t data;
};
struct fi_ioc {
  void* addr;
  size_t count;
};
struct fi_rma_ioc {
  uint64_t addr;
  size_t count;
  uint64_t key;
};
struct fi_msg_atomic {
  const fi_ioc* msg_iov;
  void** desc;
  size_t iov_count;
  fi_addr_t addr;
  const fi_rma_ioc* rma_iov;
  size_t rma_iov_count;
  int datatype;
  int op;
  void* context;
  uint64_t data;
};
static_assert(offsetof(fi_msg_atomic, datatype) == 48);

// Bytes of one element of enum fi_datatype (FI_INT8 ... FI_LONG_DOUBLE_COMPLEX).
inline uint64_t datatype_bytes(int dt) {
  static constexpr uint8_t kSize[] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 8, 16, 16, 32};
  return dt >= 0 && dt < static_cast<int>(sizeof kSize) ? kSize[dt] : 1;
}

// ---- ops tables ------------------------------------------------------------------------------------
struct fi_ops_fabric {
  size_t size;
  int (*domain)(fid_fabric*, fi_info*, fid_domain**, void*);
  int (*passive_ep)(fid_fabric*, fi_info*, fid_pep**, void*);
  int (*eq_open)(fid_fabric*, void* attr, fid_eq**, void*);
  void* wait_open;
  void* trywait;
  int (*domain2)(fid_fabric*, fi_info*, fid_domain**, uint64_t, void*);
};
struct fi_ops_domain {
  size_t size;
  int (*av_open)(fid_domain*, void* attr, fid_av**, void*);
  int (*cq_open)(fid_domain*, void* attr, fid_cq**, void*);
  int (*endpoint)(fid_domain*, fi_info*, fid_ep**, void*);
  int (*scalable_ep)(fid_domain*, fi_info*, fid_ep**, void*);
  int (*cntr_open)(fid_domain*, void* attr, fid_cntr**, void*);
  void* poll_open;
  void* stx_ctx;
  void* srx_ctx;
  void* query_atomic;
  void* query_collective;
  int (*endpoint2)(fid_domain*, fi_info*, fid_ep**, uint64_t, void*);
};
struct fi_ops_mr {
  size_t size;
  int (*reg)(fid*, const void*, size_t, uint64_t, uint64_t, uint64_t, uint64_t, fid_mr**, void*);
  int (*regv)(fid*, const iovec*, size_t, uint64_t, uint64_t, uint64_t, uint64_t, fid_mr**, void*);
  int (*regattr)(fid*, const void* attr, uint64_t, fid_mr**);
};
struct fi_ops_msg {
  size_t size;
  ssize_t (*recv)(fid_ep*, void*, size_t, void*, fi_addr_t, void*);
  ssize_t (*recvv)(fid_ep*, const iovec*, void**, size_t, fi_addr_t, void*);
  ssize_t (*recvmsg)(fid_ep*, const fi_msg*, uint64_t);
  ssize_t (*send)(fid_ep*, const void*, size_t, void*, fi_addr_t, void*);
  ssize_t (*sendv)(fid_ep*, const iovec*, void**, size_t, fi_addr_t, void*);
  ssize_t (*sendmsg)(fid_ep*, const fi_msg*, uint64_t);
  ssize_t (*inject)(fid_ep*, const void*, size_t, fi_addr_t);
  ssize_t (*senddata)(fid_ep*, const void*, size_t, void*, uint64_t, fi_addr_t, void*);
  ssize_t (*injectdata)(fid_ep*, const void*, size_t, uint64_t, fi_addr_t);
};
struct fi_ops_tagged {
  size_t size;
  ssize_t (*recv)(fid_ep*, void*, size_t, void*, fi_addr_t, uint64_t, uint64_t, void*);
  ssize_t (*recvv)(fid_ep*, const iovec*, void**, size_t, fi_addr_t, uint64_t, uint64_t, void*);
  ssize_t (*recvmsg)(fid_ep*, const fi_msg_tagged*, uint64_t);
  ssize_t (*send)(fid_ep*, const void*, size_t, void*, fi_addr_t, uint64_t, void*);
  ssize_t (*sendv)(fid_ep*, const iovec*, void**, size_t, fi_addr_t, uint64_t, void*);
  ssize_t (*sendmsg)(fid_ep*, const fi_msg_tagged*, uint64_t);
  ssize_t (*inject)(fid_ep*, const void*, size_t, fi_addr_t, uint64_t);
  ssize_t (*senddata)(fid_ep*, const void*, size_t, void*, uint64_t, fi_addr_t, uint64_t, void*);
  ssize_t (*injectdata)(fid_ep*, const void*, size_t, uint64_t, fi_addr_t, uint64_t);
};
struct fi_ops_rma {
  size_t size;
  ssize_t (*read)(fid_ep*, void*, size_t, void*, fi_addr_t, uint64_t, uint64_t, void*);
  ssize_t (*readv)(fid_ep*, const iovec*, void**, size_t, fi_addr_t, uint64_t, uint64_t, void*);
  ssize_t (*readmsg)(fid_ep*, const fi_msg_rma*, uint64_t);
  ssize_t (*write)(fid_ep*, const void*, size_t, void*, fi_addr_t, uint64_t, uint64_t, void*);
  ssize_t (*writev)(fid_ep*, const iovec*, void**, size_t, fi_addr_t, uint64_t, uint64_t, void*);
  ssize_t (*writemsg)(fid_ep*, const fi_msg_rma*, uint64_t);
  ssize_t (*inject)(fid_ep*, const void*, size_t, fi_addr_t, uint64_t, uint64_t);
  ssize_t (*writedata)(fid_ep*, const void*, size_t, void*, uint64_t, fi_addr_t, uint64_t, uint64_t, void*);
  ssize_t (*injectdata)(fid_ep*, const void*, size_t, uint64_t, fi_addr_t, uint64_t, uint64_t);
};
struct fi_ops_atomic {
  size_t size;
  ssize_t (*write)(fid_ep*, const void*, size_t, void*, fi_addr_t, uint64_t, uint64_t, int, int, void*);
  ssize_t (*writev)(fid_ep*, const fi_ioc*, void**, size_t, fi_addr_t, uint64_t, uint64_t, int, int, void*);
  ssize_t (*writemsg)(fid_ep*, const fi_msg_atomic*, uint64_t);
  ssize_t (*inject)(fid_ep*, const void*, size_t, fi_addr_t, uint64_t, uint64_t, int, int);
  ssize_t (*readwrite)(fid_ep*, const void*, size_t, void*, void*, void*, fi_addr_t, uint64_t, uint64_t, int, int, void*);
  ssize_t (*readwritev)(fid_ep*, const fi_ioc*, void**, size_t, fi_ioc*, void**, size_t, fi_addr_t, uint64_t, uint64_t, int, int,
                        void*);
  ssize_t (*readwritemsg)(fid_ep*, const fi_msg_atomic*, fi_ioc*, void**, size_t, uint64_t);
  ssize_t (*compwrite)(fid_ep*, const void*, size_t, void*, const void*, void*, void*, void*, fi_addr_t, uint64_t, uint64_t, int,
                       int, void*);
  ssize_t (*compwritev)(fid_ep*, const fi_ioc*, void**, size_t, const fi_ioc*, void**, size_t, fi_ioc*, void**, size_t, fi_addr_t,
                        uint64_t, uint64_t, int, int, void*);
  ssize_t (*compwritemsg)(fid_ep*, const fi_msg_atomic*, const fi_ioc*, void**, size_t, fi_ioc*, void**, size_t, uint64_t);
  void* writevalid;
  void* readwritevalid;
  void* compwritevalid;
};
struct fi_ops_cm {
  size_t size;
  int (*setname)(fid*, void*, size_t);
  int (*getname)(fid*, void*, size_t*);
  int (*getpeer)(fid_ep*, void*, size_t*);
  int (*connect)(fid_ep*, const void*, const void*, size_t);
  int (*listen)(fid_pep*);
  int (*accept)(fid_ep*, const void*, size_t);
  void* reject;
  void* shutdown;
  void* join;
};
struct fi_ops_cq {
  size_t size;
  ssize_t (*read)(fid_cq*, void*, size_t);
  ssize_t (*readfrom)(fid_cq*, void*, size_t, fi_addr_t*);
  ssize_t (*readerr)(fid_cq*, void* err_entry, uint64_t);
  ssize_t (*sread)(fid_cq*, void*, size_t, const void*, int);
  ssize_t (*sreadfrom)(fid_cq*, void*, size_t, fi_addr_t*, const void*, int);
  void* signal;
  void* strerror;
};
struct fi_ops_av {
  size_t size;
  int (*insert)(fid_av*, const void*, size_t, fi_addr_t*, uint64_t, void*);
  void* insertsvc;
  void* insertsym;
  void* remove;
  void* lookup;
  void* straddr;
  void* av_set;
};
struct fi_ops_eq {
  size_t size;
  ssize_t (*read)(fid_eq*, uint32_t*, void*, size_t, uint64_t);
  void* readerr;
  void* write;
  ssize_t (*sread)(fid_eq*, uint32_t*, void*, size_t, int, uint64_t);
  void* strerror;
};

// ---- objects ---------------------------------------------------------------------------------------
struct fid_fabric {
  struct fid fid;
  fi_ops_fabric* ops;
};
struct fid_domain {
  struct fid fid;
  fi_ops_domain* ops;
  fi_ops_mr* mr;
};
struct fid_ep {
  struct fid fid;
  void* ops;  // fi_ops_ep (cancel, getopt, ...): not wrapped
  fi_ops_cm* cm;
  fi_ops_msg* msg;
  fi_ops_rma* rma;
  fi_ops_tagged* tagged;
  fi_ops_atomic* atomic;
  void* collective;
};
static_assert(offsetof(fid_ep, msg) == 40 && offsetof(fid_ep, atomic) == 64);
struct fid_pep {
  struct fid fid;
  void* ops;
  fi_ops_cm* cm;
};
struct fid_cq {
  struct fid fid;
  fi_ops_cq* ops;
};
struct fid_av {
  struct fid fid;
  fi_ops_av* ops;
};
struct fid_eq {
  struct fid fid;
  fi_ops_eq* ops;
};
struct fid_cntr {
  struct fid fid;
  void* ops;
};
struct fid_mr {
  struct fid fid;
  void* mem_desc;
  uint64_t key;
};

struct fi_cq_attr {
  size_t size;
  uint64_t flags;
  int format;  // 16: FI_CQ_FORMAT_UNSPEC 0, CONTEXT 1, MSG 2, DATA 3, TAGGED 4
};
// The common prefix of every CQ entry format: context, then (MSG and up) flags and len, then
// (DATA and up) buf and data, then (TAGGED) tag.
struct fi_cq_tagged_entry {
  void* op_context;
  uint64_t flags;
  size_t len;
  void* buf;
  uint64_t data;
  uint64_t tag;
};
inline size_t cq_entry_bytes(int format) {
  switch (format) {
    case 2: return 24;
    case 3: return 40;
    case 4: return 48;
    default: return 8;
  }
}
struct fi_cq_err_entry {
  void* op_context;
  uint64_t flags;
  size_t len;
  void* buf;
  uint64_t data;
  uint64_t tag;
  size_t olen;
  int err;         // 56
  int prov_errno;  // 60
};
static_assert(offsetof(fi_cq_err_entry, err) == 56);

// fi_eq_read event ids
constexpr uint32_t FI_NOTIFY = 0, FI_CONNREQ = 1, FI_CONNECTED = 2, FI_SHUTDOWN = 3;
struct fi_eq_entry {
  struct fid* fid;
  void* context;
  uint64_t data;
};

}  // namespace sigmatrace::profiler::ofi::abi
