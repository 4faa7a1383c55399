// Process-wide softnic settings read once from the environment (SOFTNIC_*).
#pragma once
#include <cstdint>
#include <string>

namespace softnic {

enum class Identity { ConnectX6, Classic };

struct Config {
  int devices = 1;              // SOFTNIC_DEVICES: emulated devices per host
  std::string host;             // SOFTNIC_HOST: emulated host id (default: host name)
  std::string fabric;           // SOFTNIC_FABRIC: shared-memory namespace (default: per uid)
  Identity identity = Identity::ConnectX6;  // SOFTNIC_IDENTITY=classic|cx6
  uint32_t spin_us = 5;         // SOFTNIC_SPIN_US: engine busy-poll time before sleeping
  bool debug = false;           // SOFTNIC_DEBUG bit 1 (=1 or 3): trace to stderr
  // SOFTNIC_TX_DELAY_US: every message this host's QPs send leaves that long after it was first
  // seen (a slow or long link out of this host); responses and ACKs are not held.
  uint64_t tx_delay_ns = 0;
  // SOFTNIC_TX_STALL=MICROSECONDS@N: the N-th message this process's engine sends (from 1)
  // leaves that much later again, once: a stall of the machine, for sigmatrace diff's test.
  uint64_t tx_stall_ns = 0, tx_stall_at = 0;
};

// Parsed on first use; never changes afterwards.
const Config& config();

// 64-bit FNV-1a; used to derive GUIDs and LIDs from the host id.
uint64_t hash64(const std::string& s);

}  // namespace softnic

#define SOFTNIC_LOG(...)                                          \
  do {                                                            \
    if (::softnic::config().debug) ::softnic::log_line(__VA_ARGS__); \
  } while (0)
namespace softnic { void log_line(const char* fmt, ...) __attribute__((format(printf, 1, 2))); }
