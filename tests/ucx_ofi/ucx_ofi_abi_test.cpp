// The layouts that the ucx and ofi providers declare for themselves (ucx_abi.h, ofi_abi.h, so that
// libsigmatrace.so builds without UCX or libfabric headers) against the installed headers.
// Built only where those headers exist.
#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include <cstddef>

#include "profiler/providers/ofi/ofi_abi.h"
#include "profiler/providers/ucx/ucx_abi.h"

namespace u = sigmatrace::profiler::ucx::abi;
namespace o = sigmatrace::profiler::ofi::abi;

#define SAME_OFFSET(ours, theirs, field) EXPECT_EQ(offsetof(ours, field), offsetof(theirs, field)) << #theirs "." #field

TEST(UcxAbi, VendoredLayoutsMatchTheInstalledHeaders) {
  SAME_OFFSET(u::ucp_request_param, ucp_request_param_t, op_attr_mask);
  SAME_OFFSET(u::ucp_request_param, ucp_request_param_t, datatype);
  SAME_OFFSET(u::ucp_request_param, ucp_request_param_t, reply_buffer);
  SAME_OFFSET(u::ucp_request_param, ucp_request_param_t, memh);
  SAME_OFFSET(u::ucp_ep_params, ucp_ep_params_t, address);
  SAME_OFFSET(u::ucp_ep_params, ucp_ep_params_t, sockaddr);
  SAME_OFFSET(u::ucp_ep_params, ucp_ep_params_t, conn_request);
  SAME_OFFSET(u::ucp_mem_attr, ucp_mem_attr_t, address);
  SAME_OFFSET(u::ucp_mem_attr, ucp_mem_attr_t, length);
  SAME_OFFSET(u::ucp_mem_attr, ucp_mem_attr_t, mem_type);
  SAME_OFFSET(u::ucp_worker_attr, ucp_worker_attr_t, address);
  SAME_OFFSET(u::ucp_worker_attr, ucp_worker_attr_t, address_length);
  EXPECT_EQ(sizeof(u::ucp_worker_attr), sizeof(ucp_worker_attr_t));
  SAME_OFFSET(u::ucp_am_handler_param, ucp_am_handler_param_t, id);
  SAME_OFFSET(u::ucp_am_handler_param, ucp_am_handler_param_t, cb);
  SAME_OFFSET(u::ucp_am_handler_param, ucp_am_handler_param_t, arg);
  SAME_OFFSET(u::ucp_am_recv_param, ucp_am_recv_param_t, reply_ep);
  SAME_OFFSET(u::ucp_tag_recv_info, ucp_tag_recv_info_t, length);
  SAME_OFFSET(u::uct_iface_params, uct_iface_params_t, open_mode);
  EXPECT_EQ(offsetof(u::uct_iface_params, tl_name), offsetof(uct_iface_params_t, mode.device.tl_name));
  SAME_OFFSET(u::uct_iface_ops, uct_iface_ops_t, ep_am_short);
  SAME_OFFSET(u::uct_iface_ops, uct_iface_ops_t, ep_atomic64_fetch);
  SAME_OFFSET(u::uct_iface_ops, uct_iface_ops_t, ep_tag_rndv_zcopy);
  EXPECT_EQ(sizeof(u::uct_iface_ops), sizeof(uct_iface_ops_t));
  EXPECT_EQ(sizeof(u::uct_iov), sizeof(uct_iov_t));
  EXPECT_EQ(u::UCT_IFACE_PARAM_FIELD_OPEN_MODE, uint64_t{UCT_IFACE_PARAM_FIELD_OPEN_MODE});
  EXPECT_EQ(u::UCP_WORKER_ATTR_FIELD_ADDRESS, uint64_t{UCP_WORKER_ATTR_FIELD_ADDRESS});
}

TEST(OfiAbi, VendoredLayoutsMatchTheInstalledHeaders) {
  SAME_OFFSET(o::fi_info, struct fi_info, caps);
  SAME_OFFSET(o::fi_info, struct fi_info, src_addrlen);
  SAME_OFFSET(o::fi_info, struct fi_info, dest_addrlen);
  SAME_OFFSET(o::fi_info, struct fi_info, dest_addr);
  SAME_OFFSET(o::fi_info, struct fi_info, ep_attr);
  SAME_OFFSET(o::fi_info, struct fi_info, domain_attr);
  SAME_OFFSET(o::fi_info, struct fi_info, fabric_attr);
  SAME_OFFSET(o::fi_fabric_attr, struct fi_fabric_attr, prov_name);
  SAME_OFFSET(o::fi_domain_attr, struct fi_domain_attr, name);
  SAME_OFFSET(o::fid_ep, struct fid_ep, cm);
  SAME_OFFSET(o::fid_ep, struct fid_ep, msg);
  SAME_OFFSET(o::fid_ep, struct fid_ep, rma);
  SAME_OFFSET(o::fid_ep, struct fid_ep, tagged);
  SAME_OFFSET(o::fid_ep, struct fid_ep, atomic);
  SAME_OFFSET(o::fid_pep, struct fid_pep, cm);
  SAME_OFFSET(o::fid_domain, struct fid_domain, ops);
  SAME_OFFSET(o::fid_domain, struct fid_domain, mr);
  SAME_OFFSET(o::fid_cq, struct fid_cq, ops);
  SAME_OFFSET(o::fid_mr, struct fid_mr, key);
  SAME_OFFSET(o::fi_cq_attr, struct fi_cq_attr, format);
  SAME_OFFSET(o::fi_cq_err_entry, struct fi_cq_err_entry, err);
  SAME_OFFSET(o::fi_cq_err_entry, struct fi_cq_err_entry, prov_errno);
  SAME_OFFSET(o::fi_msg_tagged, struct fi_msg_tagged, tag);
  SAME_OFFSET(o::fi_msg_rma, struct fi_msg_rma, rma_iov);
  SAME_OFFSET(o::fi_msg_atomic, struct fi_msg_atomic, datatype);
  SAME_OFFSET(o::fi_msg_atomic, struct fi_msg_atomic, context);
  EXPECT_EQ(sizeof(o::fi_ops_fabric), sizeof(struct fi_ops_fabric));
  EXPECT_EQ(sizeof(o::fi_ops_domain), sizeof(struct fi_ops_domain));
  EXPECT_EQ(sizeof(o::fi_ops_mr), sizeof(struct fi_ops_mr));
  EXPECT_EQ(sizeof(o::fi_ops_msg), sizeof(struct fi_ops_msg));
  EXPECT_EQ(sizeof(o::fi_ops_tagged), sizeof(struct fi_ops_tagged));
  EXPECT_EQ(sizeof(o::fi_ops_rma), sizeof(struct fi_ops_rma));
  EXPECT_EQ(sizeof(o::fi_ops_atomic), sizeof(struct fi_ops_atomic));
  EXPECT_EQ(sizeof(o::fi_ops_cm), sizeof(struct fi_ops_cm));
  EXPECT_EQ(sizeof(o::fi_ops_cq), sizeof(struct fi_ops_cq));
  EXPECT_EQ(sizeof(o::fi_ops_av), sizeof(struct fi_ops_av));
  EXPECT_EQ(sizeof(o::fi_ops_eq), sizeof(struct fi_ops_eq));
  SAME_OFFSET(o::fi_ops_domain, struct fi_ops_domain, endpoint2);
  SAME_OFFSET(o::fi_ops_atomic, struct fi_ops_atomic, compwritemsg);
  SAME_OFFSET(o::fi_ops_cq, struct fi_ops_cq, readerr);
  EXPECT_EQ(o::FI_CONNREQ, uint32_t{FI_CONNREQ});
  EXPECT_EQ(o::FI_SHUTDOWN, uint32_t{FI_SHUTDOWN});
  EXPECT_EQ(o::kFiEavail, ssize_t{FI_EAVAIL});
  EXPECT_EQ(o::kFiEagain, ssize_t{FI_EAGAIN});
  EXPECT_EQ(o::FI_SOCKADDR_IN, uint32_t{FI_SOCKADDR_IN});
  EXPECT_EQ(o::FI_SOCKADDR_IN6, uint32_t{FI_SOCKADDR_IN6});
  EXPECT_EQ(o::FI_ADDR_STR, uint32_t{FI_ADDR_STR});
  EXPECT_EQ(o::datatype_bytes(FI_DOUBLE), sizeof(double));
  EXPECT_EQ(o::datatype_bytes(FI_UINT16), 2u);
}
