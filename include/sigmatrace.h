/* sigmatrace's application API. Programs may call it whether or not they run under the profiler:
 * resolve it with dlsym(RTLD_DEFAULT, "sigmatrace_user_mark"), which is NULL when not profiled. */
#ifndef SIGMATRACE_H
#define SIGMATRACE_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/* Records a mark (id, value): a timestamped event in simple/full mode, a count and sum of values
 * per id in aggregate mode. Costs a few nanoseconds; safe from any thread. */
void sigmatrace_user_mark(uint64_t id, uint64_t value);
#ifdef __cplusplus
}
#endif
#endif
