// `sigmatrace diff A B`: what changed from experiment A (the baseline) to B, read from their
// aggregate.json: per operation kind (counts, bytes, and the durations' distributions), per pair
// of processes, of hosts and of GPUs, per connection (QP pair) and per GPU kernel. Each row that
// changed by more than the noise threshold is ranked by the time it explains: the change in its
// operations' summed durations where they were traced (Full mode), else the time its change in
// bytes takes at the row's own rate in A. Processes are matched by rank (by host and start order
// when there is none), connections by their endpoints' processes and order, kernels by name and
// GPU: QP numbers and pids differ from run to run.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace sigmatrace::compare {

struct DiffOptions {
  // A row's durations must change by more than this to be reported: their geometric mean, or
  // their arithmetic mean for an aggregate.json without the logarithms' sums (on softnic the same
  // ping-pong's mean moves by up to 20 % from run to run).
  double threshold_percent = 25.0;
  // ...and by this many standard errors of the difference of the means compared (Welch): jitter
  // of a few operations is not a change.
  double min_z = 3.0;
  // Counts and byte totals (operations, bytes, doorbells, WQEs: exact in a program whose traffic
  // does not depend on time) must change by more than this.
  double count_threshold_percent = 5.0;
};

// Both arguments are aggregate.json documents; the result is the diff's JSON (docs/diff.md).
// Throws nlohmann::json::exception on a document whose parts do not have the shapes it reads.
nlohmann::json diff_experiments(const nlohmann::json& baseline, const nlohmann::json& experiment, const DiffOptions& options);

// The text `sigmatrace diff` prints: the top changes as a table, then what was compared.
std::string render_diff_text(const nlohmann::json& diff, size_t top);

}  // namespace sigmatrace::compare
