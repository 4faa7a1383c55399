/* One libfabric RDM endpoint (provider argv[1], default shm) that addresses itself: RMA writes and
 * reads in their plain, vector, message and inject forms, atomics (plain, message, fetching,
 * compare-and-swap, inject), and a tagged vector send matched by a receive with an ignore mask.
 * Each operation uses its own length and its own offset into one registered region, so that a
 * trace can be checked operation by operation. Prints the region's final words and what the
 * fetching atomics returned: the same lines traced or not. Exit 77: the provider is missing.
 *   ofi_rma_atomic [provider] */
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kRegion = 4096, kLocal = 4096 };

static struct fid_cq* g_cq;
static uint64_t g_region[kRegion / 8];  /* the target of every RMA and atomic */
static uint64_t g_local[kLocal / 8];    /* sources, read targets and fetched results */

static int check(ssize_t r, const char* what) {
  if (r) fprintf(stderr, "ofi_rma_atomic: %s: %s\n", what, fi_strerror((int)-r));
  return r != 0;
}

/* Retries while the provider asks to (-FI_EAGAIN), progressing the CQ meanwhile. */
#define POST(what, call)                                                   \
  do {                                                                     \
    ssize_t r_;                                                            \
    struct fi_cq_tagged_entry e_;                                          \
    while ((r_ = (call)) == -FI_EAGAIN) (void)fi_cq_read(g_cq, &e_, 0);    \
    if (check(r_, what)) return 1;                                         \
  } while (0)

/* Waits for n completions. */
static int wait_completions(int n) {
  struct fi_cq_tagged_entry e;
  while (n > 0) {
    ssize_t r = fi_cq_read(g_cq, &e, 1);
    if (r == 1) {
      --n;
    } else if (r == -FI_EAVAIL) {
      struct fi_cq_err_entry err = {0};
      fi_cq_readerr(g_cq, &err, 0);
      fprintf(stderr, "ofi_rma_atomic: completion error %s\n", fi_strerror(err.err));
      return 1;
    } else if (r != -FI_EAGAIN) {
      return check(r, "fi_cq_read");
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* provider = argc > 1 ? argv[1] : "shm";
  struct fi_info* hints = fi_allocinfo();
  struct fi_info* info = NULL;
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->fabric_attr->prov_name = strdup(provider);
  int r = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &info);
  fi_freeinfo(hints);
  if (r) {
    fprintf(stderr, "ofi_rma_atomic: no %s provider with RMA and atomics: %s\n", provider, fi_strerror(-r));
    return 77;
  }
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  struct fid_ep* ep;
  struct fid_mr *region_mr, *local_mr;
  struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
  char name[256];
  size_t namelen = sizeof name;
  fi_addr_t self = FI_ADDR_UNSPEC;
  if (check(fi_fabric(info->fabric_attr, &fabric, NULL), "fi_fabric") || check(fi_domain(fabric, info, &domain, NULL), "fi_domain") ||
      check(fi_av_open(domain, &av_attr, &av, NULL), "fi_av_open") || check(fi_cq_open(domain, &cq_attr, &g_cq, NULL), "fi_cq_open") ||
      check(fi_endpoint(domain, info, &ep, NULL), "fi_endpoint") || check(fi_ep_bind(ep, &av->fid, 0), "fi_ep_bind(av)") ||
      check(fi_ep_bind(ep, &g_cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)") || check(fi_enable(ep), "fi_enable") ||
      check(fi_getname(&ep->fid, name, &namelen), "fi_getname") ||
      check(fi_mr_reg(domain, g_region, sizeof g_region, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE, 0, 1, 0, &region_mr, NULL),
            "fi_mr_reg(region)") ||
      check(fi_mr_reg(domain, g_local, sizeof g_local, FI_READ | FI_WRITE | FI_SEND | FI_RECV, 0, 2, 0, &local_mr, NULL), "fi_mr_reg(local)"))
    return 1;
  if (fi_av_insert(av, name, 1, &self, 0, NULL) != 1) {
    fprintf(stderr, "ofi_rma_atomic: fi_av_insert failed\n");
    return 1;
  }
  if (info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
    if (check(fi_mr_bind(region_mr, &ep->fid, 0), "fi_mr_bind") || check(fi_mr_enable(region_mr), "fi_mr_enable")) return 1;
  }
  const uint64_t key = fi_mr_key(region_mr);
  void* desc = fi_mr_desc(local_mr);
  void* descs[2] = {desc, desc};
  const uint64_t base = (uint64_t)(uintptr_t)g_region;
  unsigned char* local = (unsigned char*)g_local;
  for (size_t i = 0; i < kLocal; ++i) local[i] = (unsigned char)(i * 7 + 1);
  int ctx[12];

  /* RMA writes: 100 B at +0; 30+40 B at +256; 50 B at +512 (message); 8 B at +768 (inject). */
  POST("fi_write", fi_write(ep, local, 100, desc, self, base + 0, key, &ctx[0]));
  struct iovec wv[2] = {{local + 128, 30}, {local + 192, 40}};
  POST("fi_writev", fi_writev(ep, wv, descs, 2, self, base + 256, key, &ctx[1]));
  struct iovec wm_iov = {local + 320, 50};
  struct fi_rma_iov wm_rma = {base + 512, 50, key};
  struct fi_msg_rma wm = {.msg_iov = &wm_iov, .desc = descs, .iov_count = 1, .addr = self, .rma_iov = &wm_rma, .rma_iov_count = 1,
                          .context = &ctx[2]};
  POST("fi_writemsg", fi_writemsg(ep, &wm, FI_COMPLETION));
  if (wait_completions(3)) return 1;
  POST("fi_inject_write", fi_inject_write(ep, local + 400, 8, self, base + 768, key));

  /* RMA reads into the local buffer's second half: 60 B from +0; 10+20 B from +256; 16 B from +512. */
  POST("fi_read", fi_read(ep, local + 2048, 60, desc, self, base + 0, key, &ctx[3]));
  struct iovec rv[2] = {{local + 2176, 10}, {local + 2240, 20}};
  POST("fi_readv", fi_readv(ep, rv, descs, 2, self, base + 256, key, &ctx[4]));
  struct iovec rm_iov = {local + 2304, 16};
  struct fi_rma_iov rm_rma = {base + 512, 16, key};
  struct fi_msg_rma rm = {.msg_iov = &rm_iov, .desc = descs, .iov_count = 1, .addr = self, .rma_iov = &rm_rma, .rma_iov_count = 1,
                          .context = &ctx[5]};
  POST("fi_readmsg", fi_readmsg(ep, &rm, FI_COMPLETION));
  if (wait_completions(3)) return 1;

  /* Atomics at +2048: sum of 2 uint64; fetch-and-sum of 1; compare-and-swap at +2064; a message
   * of 3 uint32 OR-ed at +3072; an inject of 1 uint32 sum at +3088. */
  uint64_t* ops = (uint64_t*)(local + 2560);
  ops[0] = 5, ops[1] = 7, ops[2] = 11, ops[3] = 12 /* compare */, ops[4] = 99 /* swap */;
  g_region[2064 / 8] = 12;
  POST("fi_atomic", fi_atomic(ep, &ops[0], 2, desc, self, base + 2048, key, FI_UINT64, FI_SUM, &ctx[6]));
  if (wait_completions(1)) return 1;
  uint64_t* fetched = (uint64_t*)(local + 2816);
  POST("fi_fetch_atomic", fi_fetch_atomic(ep, &ops[2], 1, desc, &fetched[0], desc, self, base + 2048, key, FI_UINT64, FI_SUM, &ctx[7]));
  POST("fi_compare_atomic", fi_compare_atomic(ep, &ops[4], 1, desc, &ops[3], desc, &fetched[1], desc, self, base + 2064, key, FI_UINT64,
                                              FI_CSWAP, &ctx[8]));
  uint32_t* bits = (uint32_t*)(local + 2880);
  bits[0] = 0x1, bits[1] = 0x20, bits[2] = 0x300, bits[3] = 41;
  struct fi_ioc am_ioc = {bits, 3};
  struct fi_rma_ioc am_rma = {base + 3072, 3, key};
  struct fi_msg_atomic am = {.msg_iov = &am_ioc, .desc = descs, .iov_count = 1, .addr = self, .rma_iov = &am_rma, .rma_iov_count = 1,
                             .datatype = FI_UINT32, .op = FI_BOR, .context = &ctx[9]};
  POST("fi_atomicmsg", fi_atomicmsg(ep, &am, FI_COMPLETION));
  if (wait_completions(3)) return 1;
  POST("fi_inject_atomic", fi_inject_atomic(ep, &bits[3], 1, self, base + 3088, key, FI_UINT32, FI_SUM));

  /* A tagged vector send of 20+12 B with tag 0x5a42, received by a receive for tag 0x5a00 that
   * ignores the low byte. */
  POST("fi_trecv", fi_trecv(ep, local + 3072, 64, desc, FI_ADDR_UNSPEC, 0x5a00, 0xff, &ctx[10]));
  struct iovec tv[2] = {{local + 3200, 20}, {local + 3232, 12}};
  POST("fi_tsendv", fi_tsendv(ep, tv, descs, 2, self, 0x5a42, &ctx[11]));
  if (wait_completions(2)) return 1;
  /* Injects complete without an entry: their targets are watched (the provider progresses in
   * fi_cq_read) until both arrived. */
  const volatile unsigned char* injected_write = (const volatile unsigned char*)g_region + 768;
  const volatile uint32_t* injected_sum = (const volatile uint32_t*)g_region + 3088 / 4;
  for (long spins = 0; injected_write[7] != local[407] || *injected_sum != 41; ++spins) {
    struct fi_cq_tagged_entry e;
    (void)fi_cq_read(g_cq, &e, 0);
    if (spins == 100000000L) {
      fprintf(stderr, "ofi_rma_atomic: the injected write and atomic never arrived\n");
      return 1;
    }
  }

  unsigned long sum = 0;
  for (size_t i = 0; i < kRegion; ++i) sum = sum * 31 + ((unsigned char*)g_region)[i];
  printf("region checksum %lu\n", sum);
  printf("atomic words: %llu %llu %llu; or-ed %#x %#x %#x; injected %u\n", (unsigned long long)g_region[2048 / 8],
         (unsigned long long)g_region[2056 / 8], (unsigned long long)g_region[2064 / 8], ((uint32_t*)g_region)[3072 / 4], ((uint32_t*)g_region)[3072 / 4 + 1],
         ((uint32_t*)g_region)[3072 / 4 + 2], ((uint32_t*)g_region)[3088 / 4]);
  printf("fetched %llu, compared %llu\n", (unsigned long long)fetched[0], (unsigned long long)fetched[1]);
  printf("read back %d %d %d\n", memcmp(local + 2048, local, 60) == 0, memcmp(local + 2176, local + 128, 10) == 0,
         memcmp(local + 2304, local + 320, 16) == 0);
  printf("tagged message %d\n", memcmp(local + 3072, local + 3200, 20) == 0 && memcmp(local + 3092, local + 3232, 12) == 0);

  fi_close(&ep->fid);
  fi_close(&region_mr->fid);
  fi_close(&local_mr->fid);
  fi_close(&g_cq->fid);
  fi_close(&av->fid);
  fi_close(&domain->fid);
  fi_close(&fabric->fid);
  fi_freeinfo(info);
  return 0;
}
