// Interposed exec functions: a process that execs loses its address space without running exit
// handlers, so the trace is written out first, and the new image is given the run id so that it
// joins the same experiment (its own file, same directory). If exec fails, recording stays off
// for this image.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "profiler/lifecycle/lifecycle.h"

namespace {
template <typename Fn>
Fn next_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

constexpr char kRunIdVar[] = "SIGMATRACE_RUN_ID=";

// envp with SIGMATRACE_RUN_ID set to run_id (storage kept in *entry).
std::vector<char*> with_run_id(char* const envp[], const std::string& run_id, std::string* entry) {
  std::vector<char*> out;
  *entry = kRunIdVar + run_id;
  for (char* const* e = envp; e && *e; ++e)
    if (strncmp(*e, kRunIdVar, sizeof kRunIdVar - 1) != 0) out.push_back(*e);
  out.push_back(entry->data());
  out.push_back(nullptr);
  return out;
}

void export_run_id(const std::string& run_id) {
  if (!run_id.empty()) setenv("SIGMATRACE_RUN_ID", run_id.c_str(), 1);
}

std::vector<char*> collect_varargs(const char* arg0, va_list ap, char*** envp_out) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(arg0));
  while (char* a = va_arg(ap, char*)) argv.push_back(a);
  argv.push_back(nullptr);
  if (envp_out) *envp_out = va_arg(ap, char**);
  return argv;
}
}  // namespace

extern "C" {

__attribute__((visibility("default"))) int execve(const char* path, char* const argv[], char* const envp[]) {
  static auto real = next_symbol<int (*)(const char*, char* const[], char* const[])>("execve");
  std::string run_id = sigmatrace::profiler::flush_before_exec(), entry;
  if (run_id.empty()) return real(path, argv, envp);
  std::vector<char*> env = with_run_id(envp, run_id, &entry);
  return real(path, argv, env.data());
}

__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  static auto real = next_symbol<int (*)(const char*, char* const[])>("execv");
  export_run_id(sigmatrace::profiler::flush_before_exec());
  return real(path, argv);
}

__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) {
  static auto real = next_symbol<int (*)(const char*, char* const[])>("execvp");
  export_run_id(sigmatrace::profiler::flush_before_exec());
  return real(file, argv);
}

__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[], char* const envp[]) {
  static auto real = next_symbol<int (*)(const char*, char* const[], char* const[])>("execvpe");
  std::string run_id = sigmatrace::profiler::flush_before_exec(), entry;
  if (run_id.empty()) return real(file, argv, envp);
  std::vector<char*> env = with_run_id(envp, run_id, &entry);
  return real(file, argv, env.data());
}

__attribute__((visibility("default"))) int execl(const char* path, const char* arg0, ...) {
  va_list ap;
  va_start(ap, arg0);
  std::vector<char*> argv = collect_varargs(arg0, ap, nullptr);
  va_end(ap);
  return execv(path, argv.data());
}

__attribute__((visibility("default"))) int execlp(const char* file, const char* arg0, ...) {
  va_list ap;
  va_start(ap, arg0);
  std::vector<char*> argv = collect_varargs(arg0, ap, nullptr);
  va_end(ap);
  return execvp(file, argv.data());
}

__attribute__((visibility("default"))) int execle(const char* path, const char* arg0, ...) {
  va_list ap;
  va_start(ap, arg0);
  char** envp = nullptr;
  std::vector<char*> argv = collect_varargs(arg0, ap, &envp);
  va_end(ap);
  return execve(path, argv.data(), envp);
}

}  // extern "C"
