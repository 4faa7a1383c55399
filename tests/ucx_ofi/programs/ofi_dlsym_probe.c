/* libfabric resolved by name, as a plugin loader would: dlopen("libfabric.so.1") and dlsym /
 * dlvsym of fi_getinfo and fi_fabric (not linked). Opens the tcp fabric and closes it; prints what
 * it did. The ucx/ofi tests check that the profiler saw both calls through its dlsym hooks. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <rdma/fabric.h>
#include <stdio.h>
#include <string.h>

typedef int (*getinfo_fn)(uint32_t, const char*, const char*, uint64_t, const struct fi_info*, struct fi_info**);
typedef int (*fabric_fn)(struct fi_fabric_attr*, struct fid_fabric**, void*);
typedef void (*freeinfo_fn)(struct fi_info*);
typedef struct fi_info* (*allocinfo_fn)(const struct fi_info*);

int main(int argc, char** argv) {
  int versioned = argc > 1 && strcmp(argv[1], "--dlvsym") == 0;
  void* h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return 2;
  getinfo_fn getinfo = versioned ? (getinfo_fn)dlvsym(h, "fi_getinfo", "FABRIC_1.3") : (getinfo_fn)dlsym(h, "fi_getinfo");
  fabric_fn fabric = versioned ? (fabric_fn)dlvsym(h, "fi_fabric", "FABRIC_1.1") : (fabric_fn)dlsym(h, "fi_fabric");
  freeinfo_fn freeinfo = (freeinfo_fn)dlsym(h, "fi_freeinfo");
  allocinfo_fn dupinfo = (allocinfo_fn)dlsym(h, "fi_dupinfo");
  if (!getinfo || !fabric || !freeinfo || !dupinfo) return 3;
  struct fi_info* hints = dupinfo(NULL);
  hints->fabric_attr->prov_name = strdup("tcp");
  hints->ep_attr->type = FI_EP_MSG;
  struct fi_info* info = NULL;
  int r = getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
  if (r != 0) return 4;
  struct fid_fabric* fab = NULL;
  r = fabric(info->fabric_attr, &fab, NULL);
  if (r != 0) return 5;
  printf("opened fabric of provider %s\n", info->fabric_attr->prov_name);
  fab->fid.ops->close(&fab->fid);
  freeinfo(info);
  freeinfo(hints);
  return 0;
}
