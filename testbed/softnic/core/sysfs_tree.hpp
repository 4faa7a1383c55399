// What the kernel driver of a ConnectX would put in sysfs for the emulated devices: the
// attribute files tools read (ibv_read_sysfs_file answers them without a directory), and a real
// directory tree laid out like /sys (class/infiniband/<dev> -> the PCI function's directory),
// which softnic's platform stand-in (platform/) shows programs in place of /sys/class/infiniband
// so that realpath, stat, open and opendir on those paths work as on a machine with the NIC.
#pragma once
#include <cstddef>

namespace softnic {

// The contents of attribute file `file` of the emulated device whose sysfs directory (ibdev or
// uverbs path) is dir, with a trailing newline; false if softnic has no such file.
bool sysfs_attribute(const char* dir, const char* file, char* out, size_t size);

}  // namespace softnic

// Writes the tree for this process's emulated host under root (created; an existing complete
// tree is kept) and returns 0, or an errno. Exported to the platform stand-in under
// SOFTNIC_PRIVATE_1.
extern "C" __attribute__((visibility("default"))) int softnic_write_sysfs(const char* root);
