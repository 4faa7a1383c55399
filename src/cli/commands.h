// The verbs of the `sigmatrace` command. Each registers its options on a CLI11 subcommand and
// returns the process exit status when run.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace sigmatrace::cli {

using CommandRunner = std::function<int()>;

CommandRunner add_profile_command(CLI::App& app);
CommandRunner add_info_command(CLI::App& app);
CommandRunner add_analyze_command(CLI::App& app);
CommandRunner add_report_command(CLI::App& app);
CommandRunner add_sql_command(CLI::App& app);
CommandRunner add_merge_command(CLI::App& app);
CommandRunner add_diff_command(CLI::App& app);

// The words after the first "--" on the command line: the program that `profile` runs.
extern std::vector<std::string> g_command_after_separator;

// "sigmatrace: <message>" on stderr.
void print_error(const std::string& message);

}  // namespace sigmatrace::cli
