# shellcheck shell=bash
# Sourced by the benchmark scripts: Linux CPU lists ("12,13", "8-15", as taskset -c and
# SIGMATRACE_DOORBELL_CPUS take them) as the CPU numbers they name, space-separated.
cpu_list_expand() {
  local out=() part
  for part in ${1//,/ }; do out+=($(seq "${part%-*}" "${part#*-}")); done
  echo "${out[@]}"
}
