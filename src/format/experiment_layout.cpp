// Experiment directory creation, joining, liveness and cleanup (see experiment_layout.h).
// Runs at profiler start-up and in the CLI, never on a hot path.
#include "format/experiment_layout.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "format/file_layout.h"

namespace sigmatrace::format {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool mkdir_p(const std::string& path) {
  std::string cur;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (!cur.empty() && mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
    if (i < path.size()) cur += path[i];
  }
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string read_small_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0 && s.size() < (1 << 20)) s.append(buf, static_cast<size_t>(n));
  close(fd);
  return s;
}

std::string lock_name(const std::string& host, long pid) { return host + ".p" + std::to_string(pid) + ".lock"; }

const char* const kAnalysisOutputs[] = {"trace.pftrace", "aggregate.json", "trace.sqlite", "report.txt"};

}  // namespace

std::string trace_file_name(const std::string& host, long rank, long pid) {
  std::string n = host;
  if (rank >= 0) n += ".r" + std::to_string(rank);
  n += ".p" + std::to_string(pid);
  return n + kTraceFileSuffix;
}

std::string manifest_path(const std::string& dir) { return dir + "/manifest.json"; }
std::string live_dir(const std::string& dir) { return dir + "/.live"; }

std::vector<std::string> list_trace_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& n : list_dir(dir))
    if (ends_with(n, kTraceFileSuffix)) out.push_back(dir + "/" + n);
  return out;
}

bool experiment_is_live(const std::string& dir) {
  for (const std::string& n : list_dir(live_dir(dir))) {
    int fd = open((live_dir(dir) + "/" + n).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    bool locked = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);  // closing drops the probe lock if we got it
    if (locked) return true;
  }
  return false;
}

std::string manifest_run_id(const std::string& dir) {
  std::string m = read_small_file(manifest_path(dir));
  const std::string key = "\"run_id\": \"";
  size_t p = m.find(key);
  if (p == std::string::npos) return {};
  p += key.size();
  size_t e = m.find('"', p);
  return e == std::string::npos ? std::string() : m.substr(p, e - p);
}

JoinResult create_or_join_experiment(const std::string& dir, const std::string& run_id, bool force) {
  JoinResult r;
  if (dir.empty()) {
    r.message = "empty experiment directory name";
    return r;
  }
  size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !mkdir_p(dir.substr(0, slash))) {
    r.message = "cannot create " + dir.substr(0, slash) + ": " + strerror(errno);
    return r;
  }
  if (mkdir(dir.c_str(), 0755) == 0) {
    mkdir(live_dir(dir).c_str(), 0755);
    r.decision = JoinDecision::created;
    return r;
  }
  if (errno != EEXIST) {
    r.message = "cannot create experiment directory " + dir + ": " + strerror(errno);
    return r;
  }
  // A directory someone else can write into, or a symbolic link someone else planted, would let
  // them replace or redirect the traces (and, for a process with more rights, the files it writes).
  struct stat lst;
  if (lstat(dir.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode) && lst.st_uid != geteuid() && lst.st_uid != 0) {
    r.message = "experiment directory " + dir + " is a symbolic link owned by uid " + std::to_string(lst.st_uid) +
                ", not by this user: refused";
    return r;
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    r.message = dir + " exists and is not a directory";
    return r;
  }
  if (st.st_uid != geteuid() && (st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
    r.message = "experiment directory " + dir + " belongs to uid " + std::to_string(st.st_uid) +
                " and anyone can write into it: refused";
    return r;
  }
  if (access(dir.c_str(), W_OK) != 0) {
    r.message = "experiment directory " + dir + " is not writable";
    return r;
  }
  mkdir(live_dir(dir).c_str(), 0755);
  // A directory without manifest or traces is empty (made by the user, or by a creator that has
  // not written its manifest yet): join it; write_manifest() lets the first manifest win.
  if (access(manifest_path(dir).c_str(), F_OK) != 0 && list_trace_files(dir).empty()) {
    r.decision = JoinDecision::joined;
    return r;
  }
  std::string theirs = manifest_run_id(dir);
  if ((!run_id.empty() && theirs == run_id) || experiment_is_live(dir) || force) {
    r.decision = JoinDecision::joined;
    return r;
  }
  r.decision = JoinDecision::refused;
  r.message = "experiment directory " + dir + " holds a finished earlier run" +
              (theirs.empty() ? std::string() : " (run " + theirs + ")") +
              "; use --force (SIGMATRACE_FORCE=1) to overwrite it or -o to choose another";
  return r;
}

int take_live_lock(const std::string& dir, const std::string& host, long pid) {
  mkdir(live_dir(dir).c_str(), 0755);
  int fd = open((live_dir(dir) + "/" + lock_name(host, pid)).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void release_live_lock(int fd, const std::string& dir, const std::string& host, long pid) {
  if (fd < 0) return;
  unlink((live_dir(dir) + "/" + lock_name(host, pid)).c_str());
  close(fd);
}

bool write_manifest(const std::string& dir, const std::string& json_body) {
  std::string tmp = manifest_path(dir) + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return false;
  bool ok = write(fd, json_body.data(), json_body.size()) == static_cast<ssize_t>(json_body.size());
  close(fd);
  // link() fails if a concurrent creator already wrote one: the first manifest wins.
  ok = ok && (link(tmp.c_str(), manifest_path(dir).c_str()) == 0 || errno == EEXIST);
  unlink(tmp.c_str());
  return ok;
}

bool remove_finished_experiment(const std::string& dir, std::string* error) {
  if (experiment_is_live(dir)) {
    *error = "experiment directory " + dir + " is in use by a running process; not removing it";
    return false;
  }
  for (const std::string& f : list_trace_files(dir)) unlink(f.c_str());
  for (const char* out : kAnalysisOutputs) unlink((dir + "/" + out).c_str());
  for (const std::string& n : list_dir(live_dir(dir))) unlink((live_dir(dir) + "/" + n).c_str());
  unlink(manifest_path(dir).c_str());
  return true;
}

std::string launcher_run_id() {
  if (const char* v = getenv("SIGMATRACE_RUN_ID"); v && *v) return v;
  if (const char* v = getenv("SLURM_JOB_ID"); v && *v) {
    std::string id = std::string("slurm-") + v;
    if (const char* s = getenv("SLURM_STEP_ID"); s && *s) id += std::string(".") + s;
    return id;
  }
  if (const char* v = getenv("PMIX_NAMESPACE"); v && *v) return std::string("pmix-") + v;
  if (const char* v = getenv("OMPI_MCA_ess_base_jobid"); v && *v) return std::string("ompi-") + v;
  if (const char* v = getenv("PBS_JOBID"); v && *v) return std::string("pbs-") + v;
  if (const char* v = getenv("LSB_JOBID"); v && *v) return std::string("lsf-") + v;
  return {};
}

std::string default_experiment_dir() {
  std::string id = launcher_run_id();
  if (!id.empty()) {
    for (char& c : id)
      if (c == '/' || c == ' ') c = '_';
    return "sigmatrace-" + id;
  }
  char buf[64];
  time_t now = time(nullptr);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(buf, sizeof buf, "sigmatrace-%Y%m%d-%H%M%S", &tm);
  return buf;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (c < 0x20) {
          char b[8];
          snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o;
}

}  // namespace sigmatrace::format
