// The emulated devices' sysfs: attribute contents and the directory tree (sysfs_tree.hpp).
#include "core/sysfs_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/device_registry.hpp"

namespace softnic {

bool sysfs_attribute(const char* dir, const char* file, char* out, size_t size) {
  for (Device* d : devices()) {
    bool ibdev = strcmp(dir, d->ibdev.ibdev_path) == 0;
    bool uverbs = strcmp(dir, d->ibdev.dev_path) == 0;
    if (!ibdev && !uverbs) continue;
    uint64_t g = d->node_guid;
    char guid[32];
    snprintf(guid, sizeof(guid), "%04x:%04x:%04x:%04x", unsigned(g >> 48), unsigned(g >> 32) & 0xffff,
             unsigned(g >> 16) & 0xffff, unsigned(g) & 0xffff);
    const char* v = nullptr;
    char buf[64];
    if (uverbs && !strcmp(file, "ibdev")) v = d->ibdev.name;
    else if (uverbs && !strcmp(file, "abi_version")) v = "1";
    else if (!strcmp(file, "node_guid") || !strcmp(file, "sys_image_guid")) v = guid;
    else if (!strcmp(file, "node_type")) v = "1: CA";
    else if (!strcmp(file, "board_id")) v = "SOFTNIC0000000001";
    else if (!strcmp(file, "hca_type")) v = "MT4123";
    else if (!strcmp(file, "hw_rev")) v = "0";
    else if (!strcmp(file, "fw_ver")) {
      ibv_device_attr a;
      fill_device_attr(d, &a);
      snprintf(buf, sizeof(buf), "%s", a.fw_ver);
      v = buf;
    }
    if (!v) return false;
    snprintf(out, size, "%s\n", v);
    return true;
  }
  return false;
}

namespace {

bool put_file(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == ssize_t(text.size());
  return close(fd) == 0 && ok;
}

bool make_dirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/')
      if (mkdir(path.substr(0, i).c_str(), 0755) != 0 && errno != EEXIST) return false;
  return true;
}

// One device: its PCI function, the infiniband and infiniband_verbs class entries, one port.
bool write_device(const std::string& root, const Device* d) {
  char pci[32];
  snprintf(pci, sizeof pci, "0000:%02x:00.0", 0x0e + d->index);
  const std::string fn = root + "/devices/pci0000:00/" + pci;
  const std::string ib = fn + "/infiniband/" + d->ibdev.name;
  const std::string uv = fn + "/infiniband_verbs/" + d->ibdev.dev_name;
  const std::string port = ib + "/ports/1";
  if (!make_dirs(port + "/gids") || !make_dirs(port + "/gid_attrs/types") || !make_dirs(port + "/pkeys") ||
      !make_dirs(uv) || !make_dirs(root + "/class/infiniband") || !make_dirs(root + "/class/infiniband_verbs"))
    return false;
  bool ok = put_file(fn + "/vendor", "0x15b3\n") && put_file(fn + "/device", "0x101b\n") &&
            put_file(fn + "/class", "0x020700\n") && put_file(fn + "/numa_node", "-1\n");
  char buf[128];
  for (const char* f : {"node_guid", "sys_image_guid", "node_type", "board_id", "hca_type", "hw_rev", "fw_ver"})
    ok = ok && sysfs_attribute(d->ibdev.ibdev_path, f, buf, sizeof buf) && put_file(ib + "/" + f, buf);
  for (const char* f : {"ibdev", "abi_version"})
    ok = ok && sysfs_attribute(d->ibdev.dev_path, f, buf, sizeof buf) && put_file(uv + "/" + f, buf);
  ibv_gid gid;
  device_gid(d, &gid);
  std::string g;
  for (int i = 0; i < 16; i += 2) {
    snprintf(buf, sizeof buf, "%s%02x%02x", i ? ":" : "", gid.raw[i], gid.raw[i + 1]);
    g += buf;
  }
  ibv_port_attr pa;
  fill_port_attr(d, &pa);
  snprintf(buf, sizeof buf, "0x%x\n", pa.lid);
  ok = ok && put_file(port + "/state", "4: ACTIVE\n") && put_file(port + "/phys_state", "5: LinkUp\n") &&
       put_file(port + "/link_layer", "InfiniBand\n") && put_file(port + "/lid", buf) &&
       put_file(port + "/rate", "200 Gb/sec (4X HDR)\n") && put_file(port + "/gids/0", g + "\n") &&
       put_file(port + "/gid_attrs/types/0", "IB/RoCE v1\n") && put_file(port + "/pkeys/0", "0xffff\n");
  // The class entries and the functions' device links are relative, as sysfs makes them.
  const std::string rel = std::string("../../devices/pci0000:00/") + pci;
  ok = ok && symlink((rel + "/infiniband/" + d->ibdev.name).c_str(), (root + "/class/infiniband/" + d->ibdev.name).c_str()) == 0;
  ok = ok && symlink((rel + "/infiniband_verbs/" + d->ibdev.dev_name).c_str(),
                     (root + "/class/infiniband_verbs/" + d->ibdev.dev_name).c_str()) == 0;
  ok = ok && symlink("../..", (ib + "/device").c_str()) == 0 && symlink("../..", (uv + "/device").c_str()) == 0;
  return ok;
}

void remove_tree(const std::string& path) {
  // Only what write_device makes: fixed depth, no user data.
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    unlink(path.c_str());
    return;
  }
  if (DIR* dir = opendir(path.c_str())) {
    while (dirent* e = readdir(dir))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) remove_tree(path + "/" + e->d_name);
    closedir(dir);
  }
  rmdir(path.c_str());
}

}  // namespace
}  // namespace softnic

extern "C" int softnic_write_sysfs(const char* root) {
  using namespace softnic;
  struct stat st;
  const std::string done = std::string(root) + "/.complete";
  if (stat(done.c_str(), &st) == 0) return 0;
  // Built aside and renamed into place, so that processes starting together see a whole tree.
  const std::string tmp = std::string(root) + ".tmp." + std::to_string(getpid());
  remove_tree(tmp);
  bool ok = make_dirs(tmp);
  for (const Device* d : devices()) ok = ok && write_device(tmp, d);
  ok = ok && put_file(tmp + "/.complete", "");
  if (!ok) {
    int err = errno ? errno : EIO;
    remove_tree(tmp);
    return err;
  }
  if (rename(tmp.c_str(), root) != 0) {
    remove_tree(tmp);  // another process was first: its tree is the same
    return stat(done.c_str(), &st) == 0 ? 0 : EIO;
  }
  return 0;
}
