/* Two libfabric providers with different address formats in one process: an RDM endpoint of
 * tcp (struct sockaddr_in) and one of shm (its own address strings), each with its own address
 * vector. After both are open, each endpoint's own address is inserted into its address vector,
 * the tcp one first. Prints each address's length, the same lines traced or not.
 *   ofi_two_address_formats */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct Side {
  const char* provider;
  struct fi_info* info;
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  struct fid_cq* cq;
  struct fid_ep* ep;
  char addr[256];
  size_t addrlen;
};

static int check(int r, const char* what, const char* provider) {
  if (r) fprintf(stderr, "ofi_two_address_formats: %s (%s): %s\n", what, provider, fi_strerror(-r));
  return r;
}

static int open_side(struct Side* s) {
  struct fi_info* hints = fi_allocinfo();
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->fabric_attr->prov_name = strdup(s->provider);
  int r = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &s->info);
  fi_freeinfo(hints);
  if (check(r, "fi_getinfo", s->provider)) return r;
  struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
  s->addrlen = sizeof s->addr;
  if (check(fi_fabric(s->info->fabric_attr, &s->fabric, NULL), "fi_fabric", s->provider) ||
      check(fi_domain(s->fabric, s->info, &s->domain, NULL), "fi_domain", s->provider) ||
      check(fi_av_open(s->domain, &av_attr, &s->av, NULL), "fi_av_open", s->provider) ||
      check(fi_cq_open(s->domain, &cq_attr, &s->cq, NULL), "fi_cq_open", s->provider) ||
      check(fi_endpoint(s->domain, s->info, &s->ep, NULL), "fi_endpoint", s->provider) ||
      check(fi_ep_bind(s->ep, &s->av->fid, 0), "fi_ep_bind(av)", s->provider) ||
      check(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)", s->provider) ||
      check(fi_enable(s->ep), "fi_enable", s->provider) ||
      check(fi_getname(&s->ep->fid, s->addr, &s->addrlen), "fi_getname", s->provider))
    return 1;
  return 0;
}

static void close_side(struct Side* s) {
  fi_close(&s->ep->fid);
  fi_close(&s->cq->fid);
  fi_close(&s->av->fid);
  fi_close(&s->domain->fid);
  fi_close(&s->fabric->fid);
  fi_freeinfo(s->info);
}

int main(void) {
  struct Side sides[2] = {{.provider = "tcp"}, {.provider = "shm"}};
  for (int i = 0; i < 2; ++i)
    if (open_side(&sides[i])) return 77;  /* a provider this machine lacks: the test skips */
  for (int i = 0; i < 2; ++i) {
    fi_addr_t fa = FI_ADDR_UNSPEC;
    int n = fi_av_insert(sides[i].av, sides[i].addr, 1, &fa, 0, NULL);
    if (n != 1) {
      fprintf(stderr, "ofi_two_address_formats: fi_av_insert (%s) inserted %d\n", sides[i].provider, n);
      return 1;
    }
    printf("%s: address of %zu bytes inserted\n", sides[i].provider, sides[i].addrlen);
  }
  for (int i = 1; i >= 0; --i) close_side(&sides[i]);
  return 0;
}
