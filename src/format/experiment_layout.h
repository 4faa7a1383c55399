// The on-disk contract of an experiment directory, shared by the profiler (which creates and joins
// it) and the tools (which check and read it):
//   DIR/manifest.json              written once by the process that created DIR
//   DIR/<host>.r<rank>.p<pid>.sgt  one trace file per process (".p<pid>" alone when no rank is known)
//   DIR/.live/<host>.p<pid>.lock   held (flock) by every process while it records
// A directory is "live" while any of its lock files is still locked. A process joins an existing
// directory when it is live or carries the same run id; otherwise the directory holds a finished
// earlier run and is refused unless forced.
#pragma once
#include <string>
#include <vector>

namespace sigmatrace::format {

std::string trace_file_name(const std::string& host, long rank, long pid);
std::string manifest_path(const std::string& dir);
std::string live_dir(const std::string& dir);

// Trace files (*.sgt) of an experiment, sorted by name.
std::vector<std::string> list_trace_files(const std::string& dir);

bool experiment_is_live(const std::string& dir);
// The run id recorded in DIR/manifest.json, or "" when there is none.
std::string manifest_run_id(const std::string& dir);

enum class JoinDecision { created, joined, refused, failed };
struct JoinResult {
  JoinDecision decision = JoinDecision::failed;
  std::string message;  // why it was refused or failed
};

// Creates DIR (and parents) or decides whether this run may join it. Writes no manifest: every
// process calls write_manifest() after taking its live lock, and the first one wins.
JoinResult create_or_join_experiment(const std::string& dir, const std::string& run_id, bool force);

// Takes this process's live lock; returns the fd to keep open (or -1).
int take_live_lock(const std::string& dir, const std::string& host, long pid);
void release_live_lock(int fd, const std::string& dir, const std::string& host, long pid);

// Writes manifest.json atomically (temp file + rename). json_body is the complete JSON text.
bool write_manifest(const std::string& dir, const std::string& json_body);

// Removes the files an earlier run left in DIR (traces, manifest, locks, analysis outputs), leaving
// anything else alone. Returns false with *error when DIR is live.
bool remove_finished_experiment(const std::string& dir, std::string* error);

// Default experiment directory name: from the job id when a launcher gives one, else the time.
std::string default_experiment_dir();
// Run id: SIGMATRACE_RUN_ID, else the launcher's job (and step) id, else "" (no shared identity).
std::string launcher_run_id();

std::string json_escape(const std::string& s);

}  // namespace sigmatrace::format
