// Validation of SIGMATRACE_* variables: good values parse, every bad value is named in one line.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "profiler/runtime/config.h"
#include "profiler/runtime/config_variables.h"
#include "support/file_contents.h"

using namespace sigmatrace::profiler;

namespace {
const std::vector<std::string> kKnown = {"ibverbs", "user"};

bool parse(std::vector<std::string> env, Config* c, std::string* err) {
  std::vector<char*> p;
  for (std::string& s : env) p.push_back(s.data());
  p.push_back(nullptr);
  return parse_config(p.data(), kKnown, c, err);
}
}  // namespace

TEST(Config, DefaultsWhenNothingIsSet) {
  Config c;
  std::string err;
  ASSERT_TRUE(parse({"PATH=/bin"}, &c, &err));
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.mode, TraceMode::simple);
  EXPECT_EQ(c.providers, kKnown);
  EXPECT_EQ(c.buffer_mb, 64u);
  EXPECT_EQ(c.codec, sigmatrace::format::Codec::zstd);
  EXPECT_EQ(c.kernel_markers, KernelMarkers::on);
}

TEST(Config, ParsesEveryVariable) {
  Config c;
  std::string err;
  ASSERT_TRUE(parse({"SIGMATRACE_MODE=full", "SIGMATRACE_PROVIDERS=user", "SIGMATRACE_OUTPUT=/x", "SIGMATRACE_BUFFER_MB=8",
                     "SIGMATRACE_CHUNK_KB=64", "SIGMATRACE_COMPRESSION=lz4", "SIGMATRACE_CLOCK_SYNC_MS=50",
                     "SIGMATRACE_ENABLE=on", "SIGMATRACE_FORCE=1", "SIGMATRACE_HOST=nodeA", "SIGMATRACE_RUN_ID=j7",
                     "SIGMATRACE_KERNEL_MARKERS=off"},
                    &c, &err))
      << err;
  EXPECT_EQ(c.mode, TraceMode::full);
  EXPECT_EQ(c.providers, std::vector<std::string>{"user"});
  EXPECT_EQ(c.output_dir, "/x");
  EXPECT_EQ(c.buffer_mb, 8u);
  EXPECT_EQ(c.chunk_kb, 64u);
  EXPECT_EQ(c.codec, sigmatrace::format::Codec::lz4);
  EXPECT_EQ(c.clock_sync_ms, 50u);
  EXPECT_TRUE(c.force);
  EXPECT_EQ(c.host, "nodeA");
  EXPECT_EQ(c.run_id, "j7");
  EXPECT_EQ(c.kernel_markers, KernelMarkers::off);
  ASSERT_TRUE(parse({"SIGMATRACE_KERNEL_MARKERS=timed"}, &c, &err)) << err;
  EXPECT_EQ(c.kernel_markers, KernelMarkers::timed);
  ASSERT_TRUE(parse({"SIGMATRACE_KERNEL_MARKERS=1"}, &c, &err)) << err;
  EXPECT_EQ(c.kernel_markers, KernelMarkers::on);
}

TEST(Config, ProvidersNoneAndAll) {
  Config c;
  std::string err;
  ASSERT_TRUE(parse({"SIGMATRACE_PROVIDERS=none"}, &c, &err));
  EXPECT_TRUE(c.providers.empty());
  ASSERT_TRUE(parse({"SIGMATRACE_PROVIDERS=all"}, &c, &err));
  EXPECT_EQ(c.providers, kKnown);
}

TEST(Config, BadValuesNameTheVariableTheValueAndWhatIsAccepted) {
  struct Case {
    std::string env, expect;
  } cases[] = {
      {"SIGMATRACE_MODE=fast", "invalid SIGMATRACE_MODE='fast' (accepted: aggregate|simple|full)"},
      {"SIGMATRACE_BUFFER_MB=0", "invalid SIGMATRACE_BUFFER_MB='0'"},
      {"SIGMATRACE_BUFFER_MB=12abc", "invalid SIGMATRACE_BUFFER_MB='12abc'"},
      {"SIGMATRACE_BUFFER_MB=-4", "invalid SIGMATRACE_BUFFER_MB='-4'"},
      {"SIGMATRACE_COMPRESSION=gzip", "invalid SIGMATRACE_COMPRESSION='gzip' (accepted: zstd|lz4|none)"},
      {"SIGMATRACE_ENABLE=maybe", "invalid SIGMATRACE_ENABLE='maybe'"},
      {"SIGMATRACE_KERNEL_MARKERS=2", "invalid SIGMATRACE_KERNEL_MARKERS='2' (accepted: 1|0|on|off|true|false|timed)"},
      {"SIGMATRACE_PROVIDERS=ibverbs,nccl", "unknown provider 'nccl' (accepted: all, none, ibverbs, user)"},
      {"SIGMATRACE_OUTPUT=", "invalid SIGMATRACE_OUTPUT=''"},
      {"SIGMATRACE_MDOE=full", "unknown variable SIGMATRACE_MDOE"},
  };
  for (const Case& k : cases) {
    Config c;
    std::string err;
    EXPECT_FALSE(parse({k.env}, &c, &err)) << k.env;
    EXPECT_NE(err.find(k.expect), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos);
  }
}

TEST(Config, BufferMustHoldSeveralChunks) {
  Config c;
  std::string err;
  EXPECT_FALSE(parse({"SIGMATRACE_BUFFER_MB=1", "SIGMATRACE_CHUNK_KB=512"}, &c, &err));
  EXPECT_NE(err.find("at least 4 chunks"), std::string::npos);
}

TEST(Config, ClockSkewForTestsIsAnOffsetAndAnOptionalDrift) {
  Config c;
  std::string err;
  ASSERT_TRUE(parse({"SIGMATRACE_DEBUG_CLOCK_SKEW=5000000,-12.5"}, &c, &err)) << err;
  EXPECT_EQ(c.debug_clock_offset_ns, 5000000);
  EXPECT_DOUBLE_EQ(c.debug_clock_drift_ppm, -12.5);
  ASSERT_TRUE(parse({"SIGMATRACE_DEBUG_CLOCK_SKEW=-3000"}, &c, &err)) << err;
  EXPECT_EQ(c.debug_clock_offset_ns, -3000);
  EXPECT_EQ(c.debug_clock_drift_ppm, 0);
  for (const char* bad : {"SIGMATRACE_DEBUG_CLOCK_SKEW=", "SIGMATRACE_DEBUG_CLOCK_SKEW=5ms", "SIGMATRACE_DEBUG_CLOCK_SKEW=1,",
                          "SIGMATRACE_DEBUG_CLOCK_SKEW=1,2000", "SIGMATRACE_DEBUG_CLOCK_SKEW=10000000000000"}) {
    EXPECT_FALSE(parse({bad}, &c, &err)) << bad;
    EXPECT_NE(err.find("SIGMATRACE_DEBUG_CLOCK_SKEW"), std::string::npos) << err;
  }
}

// The table of variables is the one declaration: docs/profiling.md holds it as generated, and a
// change to a row that is not carried into the docs fails here. UPDATE_DOCS=1 rewrites the docs'
// table from the code (then review the diff).
TEST(ConfigVariables, TheDocsTableIsGeneratedFromTheTable) {
  const std::string path = std::string(SIGMATRACE_SOURCE_DIR) + "/docs/profiling.md";
  const std::string begin = "<!-- generated from src/profiler/runtime/config_variables.cpp: UPDATE_DOCS=1 "
                            "sigmatrace_runtime_unit_tests --gtest_filter=ConfigVariables.* -->\n";
  const std::string end = "<!-- end of the generated table -->";
  std::string doc = sigmatrace::test::read_file(path);
  const size_t a = doc.find(begin);
  size_t b = doc.find(end);
  ASSERT_NE(a, std::string::npos) << path << " has no line " << begin;
  ASSERT_NE(b, std::string::npos) << path << " has no line " << end;
  const std::string table = config_variables_markdown();
  if (const char* u = getenv("UPDATE_DOCS"); u && std::string(u) == "1") {
    doc.replace(a + begin.size(), b - a - begin.size(), table);
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_TRUE(f);
    fwrite(doc.data(), 1, doc.size(), f);
    fclose(f);
    b = doc.find(end);
  }
  EXPECT_EQ(doc.substr(a + begin.size(), b - a - begin.size()), table)
      << "docs/profiling.md's table of SIGMATRACE_* variables differs from config_variables.cpp";
}

TEST(ConfigVariables, HelpNamesEveryVariableWithWhatItAcceptsAndItsDefault) {
  const std::string help = config_variables_help();
  size_t n = 0;
  for (const ConfigVariable& v : config_variables()) {
    EXPECT_NE(help.find("  " + std::string(v.name) + "=" + v.accepted + "\n"), std::string::npos) << v.name;
    EXPECT_NE(help.find(std::string("(default ") + v.default_value + ")"), std::string::npos) << v.name;
    EXPECT_NE(find_config_variable(v.name), nullptr);
    ++n;
  }
  EXPECT_EQ(n, 25u);
  EXPECT_EQ(find_config_variable("SIGMATRACE_NOPE"), nullptr);
}
