// One-line messages from the profiler to stderr, written with write(2) so they are safe anywhere
// (inside constructors, after fork, in signal handlers when the text is preformatted).
#pragma once

namespace sigmatrace::profiler {
// "sigmatrace: <text>\n" in one write.
void log_line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
}  // namespace sigmatrace::profiler
