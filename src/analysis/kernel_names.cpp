// See kernel_names.h.
#include "analysis/kernel_names.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace sigmatrace::analysis {
namespace {

std::string demangled(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : std::string();
}

// Drops the trailing parameter list: the last top-level "(...)" (templates may hold parentheses).
std::string without_parameters(const std::string& name) {
  if (name.empty() || name.back() != ')') return name;
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    else if (name[i] == '(' && --depth == 0) return name.substr(0, i);
  }
  return name;
}

}  // namespace

std::string readable_kernel_name(const std::string& symbol) {
  // The mangled part starts at the first "_Z" that demangles (after nvcc's internal-linkage prefix).
  std::string name;
  for (size_t at = symbol.find("_Z"); at != std::string::npos && name.empty(); at = symbol.find("_Z", at + 1))
    name = demangled(symbol.c_str() + at);
  if (name.empty()) return symbol;
  name = without_parameters(name);
  if (name.rfind("void ", 0) == 0) name.erase(0, 5);  // a template's return type (a kernel's is void)
  for (const std::string anon = "(anonymous namespace)::"; name.rfind(anon, 0) == 0;) name.erase(0, anon.size());
  return name;
}

}  // namespace sigmatrace::analysis
