// Interposed exec functions: a process that execs loses its address space without running exit
// handlers, so the trace is written out first. If exec fails, recording stays off for this image.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdarg>
#include <vector>

#include "profiler/runtime/lifecycle.h"

namespace {
template <typename Fn>
Fn next_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
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
  sigmatrace::profiler::flush_before_exec();
  return real(path, argv, envp);
}

__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  static auto real = next_symbol<int (*)(const char*, char* const[])>("execv");
  sigmatrace::profiler::flush_before_exec();
  return real(path, argv);
}

__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) {
  static auto real = next_symbol<int (*)(const char*, char* const[])>("execvp");
  sigmatrace::profiler::flush_before_exec();
  return real(file, argv);
}

__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[], char* const envp[]) {
  static auto real = next_symbol<int (*)(const char*, char* const[], char* const[])>("execvpe");
  sigmatrace::profiler::flush_before_exec();
  return real(file, argv, envp);
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
