// Emulated ConnectX identity: vendor 0x02c9 with a ConnectX-6 part id (perftest takes its
// ibv_wr_* path for it), or ConnectX-3 Pro with SOFTNIC_IDENTITY=classic (classic post_send).
// GUIDs and LIDs are derived from the emulated host id so processes can stand for nodes.
#include "core/device_registry.hpp"

#include <endian.h>

#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/config.hpp"

namespace softnic {

namespace {
constexpr uint32_t kMellanoxVendor = 0x02c9;
constexpr uint32_t kPartConnectX6 = 4123;
constexpr uint32_t kPartConnectX3Pro = 4103;

std::vector<Device*>* build() {
  auto* v = new std::vector<Device*>();
  const Config& c = config();
  uint64_t h = hash64(c.host);
  for (int i = 0; i < c.devices; ++i) {
    auto* d = new Device{};
    d->index = i;
    // Mellanox OUI 00:02:c9 in the top bytes, host hash below, device index in the low byte.
    d->node_guid = (0x0002c90300000000ull | ((h & 0xffffffull) << 8)) + uint64_t(i) * 2;
    // Unicast LIDs are 1..0xbfff; spread hosts and keep the devices of one host adjacent.
    d->lid = uint16_t(1 + ((h % 0x2fff) * 4 + uint64_t(i)) % 0xbffe);
    d->ibdev.node_type = IBV_NODE_CA;
    d->ibdev.transport_type = IBV_TRANSPORT_IB;
    snprintf(d->ibdev.name, sizeof(d->ibdev.name), "mlx5_%d", i);
    snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "uverbs%d", i);
    snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path), "/sys/class/infiniband_verbs/uverbs%d", i);
    snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path), "/sys/class/infiniband/mlx5_%d", i);
    v->push_back(d);
  }
  return v;
}
}  // namespace

const std::vector<Device*>& devices() {
  static std::vector<Device*>* v = build();
  return *v;
}

Device* to_device(ibv_device* d) {
  for (Device* x : devices())
    if (&x->ibdev == d) return x;
  return nullptr;
}

void fill_device_attr(const Device* d, ibv_device_attr* a) {
  memset(a, 0, sizeof(*a));
  bool classic = config().identity == Identity::Classic;
  snprintf(a->fw_ver, sizeof(a->fw_ver), classic ? "2.42.5000" : "20.39.1002");
  a->node_guid = htobe64(d->node_guid);
  a->sys_image_guid = htobe64(d->node_guid);
  a->max_mr_size = ~0ull;
  a->page_size_cap = 0xfffffffffffff000ull;
  a->vendor_id = kMellanoxVendor;
  a->vendor_part_id = classic ? kPartConnectX3Pro : kPartConnectX6;
  a->hw_ver = 0;
  a->max_qp = 1 << 16;
  a->max_qp_wr = kMaxQpWr;
  a->device_cap_flags = IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR |
                        IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_PORT_ACTIVE_EVENT |
                        IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN |
                        IBV_DEVICE_N_NOTIFY_CQ;  // no SRQ resize: ibv_modify_srq(MAX_WR) is refused
  a->max_sge = kMaxSge;
  a->max_sge_rd = kMaxSge;
  a->max_cq = 1 << 16;
  a->max_cqe = kMaxCqe;
  a->max_mr = 1 << 20;
  a->max_pd = 1 << 16;
  a->max_qp_rd_atom = kMaxRdAtomic;
  a->max_ee_rd_atom = 0;
  a->max_res_rd_atom = kMaxRdAtomic << 16;
  a->max_qp_init_rd_atom = kMaxRdAtomic;
  a->atomic_cap = IBV_ATOMIC_HCA;
  a->max_mcast_grp = 0;
  a->max_mcast_qp_attach = 0;
  a->max_total_mcast_qp_attach = 0;
  a->max_ah = 1 << 20;
  a->max_srq = 1 << 16;
  a->max_srq_wr = kMaxSrqWr;
  a->max_srq_sge = kMaxSge + 1;
  a->max_pkeys = 128;
  a->local_ca_ack_delay = 16;
  a->phys_port_cnt = kPortCount;
}

void fill_device_attr_ex(const Device* d, ibv_device_attr_ex* a, size_t size) {
  ibv_device_attr_ex full;
  memset(&full, 0, sizeof(full));
  fill_device_attr(d, &full.orig_attr);
  full.max_dm_size = 0;  // no device memory
  full.phys_port_cnt_ex = kPortCount;
  memcpy(a, &full, size < sizeof(full) ? size : sizeof(full));
}

void fill_port_attr(const Device* d, ibv_port_attr* a) {
  memset(a, 0, sizeof(*a));
  a->state = IBV_PORT_ACTIVE;
  a->max_mtu = IBV_MTU_4096;
  a->active_mtu = IBV_MTU_4096;
  a->gid_tbl_len = 1;
  a->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_VENDOR_CLASS_SUP | IBV_PORT_SYS_IMAGE_GUID_SUP |
                      IBV_PORT_CAP_MASK2_SUP;
  a->max_msg_sz = kMaxMsgSize;
  a->pkey_tbl_len = 128;
  a->lid = d->lid;
  a->sm_lid = 1;
  a->lmc = 0;
  a->max_vl_num = 4;
  a->sm_sl = 0;
  a->subnet_timeout = 18;
  a->active_width = 2;    // 4X
  a->active_speed = 64;   // HDR
  a->phys_state = 5;      // LinkUp
  a->link_layer = IBV_LINK_LAYER_INFINIBAND;
}

void device_gid(const Device* d, ibv_gid* gid) {
  // Link-local subnet prefix fe80::/64 followed by the port GUID (node GUID + 1).
  uint64_t prefix = htobe64(0xfe80000000000000ull);
  uint64_t guid = htobe64(d->node_guid + 1);
  memcpy(gid->raw, &prefix, 8);
  memcpy(gid->raw + 8, &guid, 8);
}

}  // namespace softnic
