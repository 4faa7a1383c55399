# shellcheck shell=bash
# Sourced by the GPU benchmark scripts (doorbell_overhead.sh, doorbell_forward.sh): how a kind is
# named. KIND/VAR=VALUE... is KIND run with those variables set for its runs only.

# A kind's name as a file name (":", "/", "=" and "," become "-"); pairing.py's kind_tag is the
# same rule, for the Python scripts that read the results.
kind_tag() { local t=${1//[:\/=,]/-}; echo "$t"; }

# Sets kind (NAME up to its first "/") and the array extra (the VAR=VALUE settings after it).
split_kind() {
  IFS=/ read -r -a extra <<< "$1"
  kind=${extra[0]} extra=("${extra[@]:1}")
}
