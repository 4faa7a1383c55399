# The case studies' program arguments, shared by the tests and run_case_studies.sh (sourced):
# MoE: 256 tokens of 2 KiB per PE, 60 % of every other PE's tokens to PE 0's expert; BFS: an
# R-MAT graph of 2^13 vertices and 8 edges per vertex, PE 1 waiting 2 ms more before each
# level's barrier. MOE_ARGS and BFS_ARGS from the environment win.
MOE_ARGS=${MOE_ARGS:---tokens 256 --token-bytes 2048 --hot-pe 0 --hot-percent 60}
BFS_ARGS=${BFS_ARGS:---scale 13 --edge-factor 8 --slow-pe 1 --delay-us 2000}
