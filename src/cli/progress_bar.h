// The progress display of long analyses: "analyze: pass 2/2 (association, timeline, SQL)
// [#####.....] 52%  14.1 M events/s" on stderr, redrawn five times a second, on a terminal only
// (a log or a pipe gets nothing). The phase, how far it is and its rate: MB/s in the first pass,
// where the number of events is not known yet, events/s in the second.
#pragma once
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "analysis/pipeline.h"

namespace sigmatrace::cli {

// One line of the display (no carriage return): `verb` ("analyze", "merge"), the progress so far,
// and the seconds since the current pass began.
std::string progress_line(const char* verb, const analysis::Progress& p, double seconds_in_pass);

class ProgressBar {
 public:
  // Draws until destroyed, when stderr is a terminal.
  ProgressBar(const char* verb, analysis::Progress* p);
  ~ProgressBar();

 private:
  const char* verb_;
  analysis::Progress* p_;
  int pass_ = 0;
  std::chrono::steady_clock::time_point since_;
  std::atomic<bool> stop_{false};
  std::thread t_;
};

}  // namespace sigmatrace::cli
