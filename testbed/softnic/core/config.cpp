// Reads the SOFTNIC_* environment variables that select identity, topology and tuning.
#include "core/config.hpp"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace softnic {

static Config load() {
  Config c;
  if (const char* v = getenv("SOFTNIC_DEVICES")) {
    int n = atoi(v);
    c.devices = n < 0 ? 0 : (n > 16 ? 16 : n);
  }
  if (const char* v = getenv("SOFTNIC_HOST"); v && *v) {
    c.host = v;
  } else {
    char buf[256] = {};
    gethostname(buf, sizeof(buf) - 1);
    c.host = buf;
  }
  if (const char* v = getenv("SOFTNIC_FABRIC"); v && *v) {
    // The fabric name becomes part of /dev/shm names: keep it to a safe alphabet.
    for (const char* p = v; *p && c.fabric.size() < 48; ++p)
      c.fabric += (isalnum((unsigned char)*p) || *p == '_' || *p == '-') ? *p : '_';
  } else {
    c.fabric = "uid" + std::to_string(getuid());
  }
  if (const char* v = getenv("SOFTNIC_IDENTITY"); v && strcmp(v, "classic") == 0)
    c.identity = Identity::Classic;
  if (const char* v = getenv("SOFTNIC_SPIN_US")) c.spin_us = (uint32_t)strtoul(v, nullptr, 10);
  if (const char* v = getenv("SOFTNIC_TX_DELAY_US")) c.tx_delay_ns = strtoull(v, nullptr, 10) * 1000;
  if (const char* v = getenv("SOFTNIC_TX_STALL"); v && *v) {
    char* at = nullptr;
    const unsigned long long us = strtoull(v, &at, 10);
    char* end = nullptr;
    const unsigned long long n = at && *at == '@' ? strtoull(at + 1, &end, 10) : 0;
    if (at == v || !end || end == at + 1 || *end || n == 0) {
      fprintf(stderr, "softnic: SOFTNIC_TX_STALL=%s: expected MICROSECONDS@N (N >= 1, the message to hold)\n", v);
      exit(2);
    }
    c.tx_stall_ns = us * 1000, c.tx_stall_at = n;
  }
  // SOFTNIC_DEBUG is a set of bits: 1 trace lines, 2 devx state dumps (devx_debug.cpp).
  if (const char* v = getenv("SOFTNIC_DEBUG")) c.debug = (atoi(v) & 1) != 0;
  return c;
}

const Config& config() {
  static const Config c = load();
  return c;
}

uint64_t hash64(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

void log_line(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  fprintf(stderr, "[softnic %d] %s\n", (int)getpid(), buf);
}

}  // namespace softnic
