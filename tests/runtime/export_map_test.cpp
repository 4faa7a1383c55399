// The export map of libsigmatrace.so is generated from the providers' symbol lists: a wrapper a
// provider defines but does not list would be hidden by the map and never called, silently. This
// test holds the three views to each other: what the providers list (the generated map), what
// the library exports, and which functions the runtime's objects define as exported.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "support/process_runner.h"

using namespace sigmatrace::test;

namespace {

std::set<std::string> words_of(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

std::string joined(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& w : s) out += w + " ";
  return out;
}

std::set<std::string> difference(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> d;
  for (const std::string& x : a)
    if (!b.count(x)) d.insert(x);
  return d;
}

}  // namespace

TEST(ExportMap, TheProvidersListsTheLibrarysExportsAndTheExportedDefinitionsAgree) {
  if (find_program("nm").empty() || find_program("readelf").empty()) GTEST_SKIP() << "skipped: binutils (nm, readelf) not installed";
  std::ifstream map_file(build_path("src/profiler/exports.map"));
  ASSERT_TRUE(map_file) << "no generated export map";
  std::stringstream map_text;
  map_text << map_file.rdbuf();
  std::set<std::string> listed;
  std::regex entry(R"(^\s+([A-Za-z_][A-Za-z0-9_]*);\s*$)");
  std::string line;
  for (std::istringstream in(map_text.str()); std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, entry)) listed.insert(m[1]);
  }
  ASSERT_GT(listed.size(), 50u);

  ProcessResult nm = run_process({"sh", "-c", "nm -D --defined-only \"$0\" | awk '$2 == \"T\" || $2 == \"D\" {print $3}'", build_path("lib/libsigmatrace.so")});
  ASSERT_EQ(nm.exit_code, 0) << nm.err;
  std::set<std::string> exported = words_of(nm.out);

  ProcessResult re = run_process({"sh", "-c",
                                  "readelf -sW \"$0\" | awk '($4 == \"FUNC\" || ($4 == \"OBJECT\" && $8 !~ /^_Z/)) && $5 == \"GLOBAL\" && $6 == \"DEFAULT\" && $7 != \"UND\" {print $8}'",
                                  build_path("lib/libsigmatrace_runtime.a")});
  ASSERT_EQ(re.exit_code, 0) << re.err;
  std::set<std::string> defined = words_of(re.out);

  EXPECT_EQ(difference(defined, listed), std::set<std::string>{})
      << "defined as exported but listed by no provider (the map hides them): " << joined(difference(defined, listed));
  EXPECT_EQ(difference(listed, exported), std::set<std::string>{})
      << "listed but not exported: " << joined(difference(listed, exported));
  EXPECT_EQ(difference(exported, listed), std::set<std::string>{})
      << "exported but listed by no provider: " << joined(difference(exported, listed));
}
