# Sourced by scripts and shell tests. Prints a TCP port in the kernel's ephemeral range that no
# socket listens on. Fixed test ports (softnic's ctest cases) stay below 32768, so a script that
# runs beside the test suite does not hand its client to another test's server.
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
