# shellcheck shell=bash
# Sourced by the benchmark scripts: Linux CPU lists ("12,13", "8-15", as taskset -c and
# SIGMATRACE_DOORBELL_CPUS take them) as the CPU numbers they name, space-separated.
cpu_list_expand() {
  local out=() part c
  for part in ${1//,/ }; do
    for ((c = ${part%-*}; c <= ${part#*-}; c++)); do out+=("$c"); done
  done
  echo "${out[@]}"
}
