// Helpers shared by the analysis tests: run the analysis on a directory, query trace.sqlite,
// read aggregate.json.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis_run/analysis_run.h"
#include "support/file_contents.h"

namespace sigmatrace::test {

exporter::AnalysisRun analyze_dir(const std::string& dir, unsigned threads = 2);
// First column of the first row as an integer (the test fails on an SQL error).
int64_t sql_int(const std::string& db, const std::string& query);
// All rows, each column as text ("NULL" for NULL), joined with '|'.
std::vector<std::string> sql_rows(const std::string& db, const std::string& query);
nlohmann::json read_json(const std::string& path);

}  // namespace sigmatrace::test
