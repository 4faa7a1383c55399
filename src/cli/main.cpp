// Entry point of the `sigmatrace` command: dispatches to the verbs (profile, info, ...).
#include <cstdio>
#include <iostream>

#include "cli/commands.h"

#include "sigmatrace_revision.h"  // generated at every build: the source revision (cmake/revision.cmake)

#ifndef SIGMATRACE_VERSION
#define SIGMATRACE_VERSION "unknown"
#endif

namespace sigmatrace::cli {
void print_error(const std::string& message) { std::fprintf(stderr, "sigmatrace: %s\n", message.c_str()); }
}  // namespace sigmatrace::cli

int main(int argc, char** argv) {
  using namespace sigmatrace::cli;
  CLI::App app{"sigmatrace: operation-level profiler for RDMA communication (verbs, mlx5, GPU-initiated, UCX, libfabric, NCCL)",
               "sigmatrace"};
  app.set_version_flag("--version", "sigmatrace " SIGMATRACE_VERSION " (" SIGMATRACE_REVISION ")");
  app.require_subcommand(1);
  CommandRunner profile = add_profile_command(app);
  CommandRunner info = add_info_command(app);
  CommandRunner analyze = add_analyze_command(app);
  CommandRunner merge = add_merge_command(app);
  CommandRunner report = add_report_command(app);
  CommandRunner diff = add_diff_command(app);
#ifdef SIGMATRACE_HAVE_SQLITE
  CommandRunner sql = add_sql_command(app);
#else
  CommandRunner sql = [] {
    print_error("sql: this sigmatrace was built without SQLite's library (libsqlite3.so.0): install libsqlite3-0 and rebuild");
    return 2;
  };
  app.add_subcommand("sql", "query trace.sqlite (needs a build with SQLite)")->allow_extras();
#endif
  // Everything after the first "--" belongs to the profiled program, options included.
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) args.push_back(argv[i]);  // CLI11 takes them reversed
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) != "--") continue;
    g_command_after_separator.assign(argv + i + 1, argv + argc);
    args.assign(args.begin() + (argc - i), args.end());
    break;
  }
  bool known_command = true;
  if (!args.empty() && args.back()[0] != '-') {
    try {
      app.get_subcommand(args.back());
    } catch (const CLI::OptionNotFound&) {
      known_command = false;
    }
  }
  if (!known_command) {
    std::string known;
    for (const CLI::App* sub : app.get_subcommands({})) known += (known.empty() ? "" : ", ") + sub->get_name();
    print_error("unknown command '" + args.back() + "' (accepted: " + known + ")");
    return 2;
  }
  if (args.empty()) {
    print_error("no command given (usage: sigmatrace <profile|info|...> [options]; see sigmatrace --help)");
    return 2;
  }
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, naming the problem, instead of CLI11's multi-line usage dump.
    print_error(std::string(e.what()) + " (see sigmatrace --help)");
    return 2;
  }
  if (app.got_subcommand("profile")) return profile();
  if (app.got_subcommand("info")) return info();
  if (app.got_subcommand("analyze")) return analyze();
  if (app.got_subcommand("merge")) return merge();
  if (app.got_subcommand("report")) return report();
  if (app.got_subcommand("diff")) return diff();
  if (app.got_subcommand("sql")) return sql();
  return 2;
}
