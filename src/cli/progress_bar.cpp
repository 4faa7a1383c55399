// See progress_bar.h.
#include "cli/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace sigmatrace::cli {

std::string progress_line(const char* verb, const analysis::Progress& p, double s) {
  char line[256];
  const int pass = std::max(p.pass.load(), 1);
  if (pass == 3) {
    std::snprintf(line, sizeof line, "%s: writing outputs (SQL indexes, summary) %5.1f s", verb, s);
    return line;
  }
  const uint64_t total = p.total_bytes.load();
  const double f = total ? std::min(1.0, static_cast<double>(p.bytes_done.load()) / static_cast<double>(total)) : 0;
  char bar[31];
  const int n = static_cast<int>(f * 30);
  for (int i = 0; i < 30; ++i) bar[i] = i < n ? '#' : '.';
  bar[30] = 0;
  char rate[32] = "";
  if (s > 0.2 && pass == 2) std::snprintf(rate, sizeof rate, "%6.1f M events/s", f * static_cast<double>(p.total_events.load()) / s / 1e6);
  else if (s > 0.2) std::snprintf(rate, sizeof rate, "%6.0f MB/s", f * static_cast<double>(total) / s / 1e6);
  std::snprintf(line, sizeof line, "%s: pass %d/2 %-30s [%s] %3d%% %s", verb, pass,
                pass == 1 ? "(peers, QPs, clocks)" : "(association, timeline, SQL)", bar, static_cast<int>(f * 100), rate);
  return line;
}

ProgressBar::ProgressBar(const char* verb, analysis::Progress* p) : verb_(verb), p_(p) {
  if (!isatty(STDERR_FILENO)) return;
  t_ = std::thread([this] {
    while (!stop_) {
      const auto now = std::chrono::steady_clock::now();
      const int pass = std::max(p_->pass.load(), 1);
      if (pass != pass_) pass_ = pass, since_ = now;
      const std::string line = progress_line(verb_, *p_, std::chrono::duration<double>(now - since_).count());
      std::fprintf(stderr, "\r%-110s", line.c_str());
      for (int i = 0; i < 10 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::fprintf(stderr, "\r%110s\r", "");
  });
}

ProgressBar::~ProgressBar() {
  stop_ = true;
  if (t_.joinable()) t_.join();
}

}  // namespace sigmatrace::cli
