# shellcheck shell=bash
# Sourced by scripts and shell tests: TCP ports for servers started in the background.

# True when a local socket listens on port $1 (state 0A in /proc/net/tcp{,6}).
tcp_port_listening() {
  local hex
  hex=$(printf '%04X' "$1")
  grep -q ":$hex [0-9A-F:]* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# Waits up to $2 tenths of a second (default 300) for a listener on port $1.
wait_tcp_listening() {
  for _ in $(seq "${2:-300}"); do
    tcp_port_listening "$1" && return 0
    sleep 0.1
  done
  return 1
}

# Prints a TCP port in the kernel's ephemeral range that no socket uses. Fixed test ports
# (softnic's ctest cases) stay below 32768, so a script that runs beside the test suite does not
# hand its client to another test's server.
unused_tcp_port() {
  local port hex
  for _ in $(seq 100); do
    port=$((32768 + (RANDOM * 32768 + RANDOM) % 28000))
    hex=$(printf ':%04X ' "$port")
    if ! grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "no unused TCP port found" >&2
  return 1
}
