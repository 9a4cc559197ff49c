/* A host's wall clock moved by SKEWED_CLOCK_OFFSET seconds (tests/support/skewed_clock.py): preloaded into
   a process, it answers the wall-clock calls with the true time plus the offset and leaves every other
   clock alone, so sleeps and lock timeouts (on the monotonic clock) behave as on any host. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static long offset_s(void) {
    static long offset = 0;
    static int read = 0;
    if (!read) {
        const char *value = getenv("SKEWED_CLOCK_OFFSET");
        offset = value ? strtol(value, NULL, 10) : 0;
        read = 1;
    }
    return offset;
}

static int wall(clockid_t clock) {
    return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    static int (*real)(clockid_t, struct timespec *) = NULL;
    if (!real) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int result = real(clock, ts);
    if (result == 0 && ts && wall(clock)) ts->tv_sec += offset_s();
    return result;
}

int gettimeofday(struct timeval *tv, void *tz) {
    struct timespec ts;
    int result = clock_gettime(CLOCK_REALTIME, &ts);
    if (result == 0 && tv) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    (void)tz;
    return result;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}
