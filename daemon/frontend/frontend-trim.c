/* SPDX-License-Identifier: MIT */
/* Memory given back after a burst: when trim-schedule.c says a burst is over, HTTP/2's per-loop free lists
 * are emptied, the idle connections to the workers closed, and glibc is asked to return its free pages
 * (malloc_trim). Measured with bench/memory-after-burst.sh: after 64 h2c connections × 32 streams the
 * commander kept about 32 MB over its idle RSS for good, all of it free chunks below the top of the heap
 * and the free lists; trimmed, it is back within 1 MB of idle. The connections to the workers the burst
 * opened (up to 64 per worker) would stay until their idle timeout, and their buffers (80 KiB each)
 * pin pages the trim cannot give back while they live: 2.3 to 2.6 MB over idle with 57 of them. */

#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

#include "frontend-internal.h"
#include "log.h"

/* The calm wanted after the count fell: the last connections of a burst close over a moment. */
#define TRIM_DELAY (1 * USEC_PER_SEC)
/* A trim walks the heap and hands back its free pages: after the burst of bench/memory-after-burst.sh,
 * 84 madvise/brk calls, 5.6 ms of wall time under strace on a busy machine (strace inflates each call).
 * Once per 5 s at most keeps that out of sight under any pattern of connections, and a burst's memory is
 * still back within 10 s. */
#define TRIM_INTERVAL (5 * USEC_PER_SEC)
#define TRIM_ACCURACY (250 * USEC_PER_MSEC)
/* Fewer connections at once are no burst: what they leave is below what a trim is worth. */
#define TRIM_MIN_PEAK 8U

/* The resident set in KiB from /proc/self/statm, for the log line; 0 when unreadable. */
static unsigned long rss_kib(void) {
        unsigned long size, resident = 0;
        FILE *f = fopen("/proc/self/statm", "re");

        if (!f)
                return 0;
        if (fscanf(f, "%lu %lu", &size, &resident) != 2)
                resident = 0;
        fclose(f);
        return resident * (unsigned long) sysconf(_SC_PAGESIZE) / 1024;
}

static int on_trim(sd_event_source *s, uint64_t usec, void *userdata) {
        Frontend *fe = userdata;
        unsigned long before;

        if (!trim_schedule_due(&fe->trim, fe->n_connections, usec))
                return 0;
        before = rss_kib();
        frontend_h2_release_pools();
        exchange_pool_release();
        for (unsigned w = 0; w < fe->forward_slots; w++)
                forward_pool_close_idle(fe->forward[w]);
        (void) malloc_trim(0);
        log_debug("Burst over (%u client connections open): memory given back, RSS %lu KiB -> %lu KiB",
                  fe->n_connections, before, rss_kib());
        return 0;
}

int frontend_trim_start(Frontend *fe) {
        int r;

        trim_schedule_init(&fe->trim, TRIM_DELAY, TRIM_INTERVAL, TRIM_MIN_PEAK);
        r = sd_event_add_time(fe->event, &fe->trim_timer, CLOCK_MONOTONIC, USEC_INFINITY, TRIM_ACCURACY, on_trim,
                              fe);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(fe->trim_timer, SD_EVENT_OFF);
}
