/* SPDX-License-Identifier: MIT */
/* ep-burn: a worker with a known load, for the sensor's real-cgroup tests. Runs its phases in order and
 * writes when each began and ended (CLOCK_MONOTONIC microseconds, the clock of the reports) so a test can
 * pick the reports whose whole interval lies inside one phase:
 *     ep-burn [--stamps FILE] mem:64M idle:1s burn:2s idle:1500ms
 * burn spins one thread on one core; idle sleeps; mem allocates and touches SIZE bytes and keeps them.
 * Alongside, "sample t=MONO cpu=USEC" lines give the process's own CPU time every 50 ms of a burn (and at
 * every phase boundary): on a shared machine the burner may not get a whole core, and the test then
 * compares the sensor with what really ran. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "time-util.h"

static volatile uint64_t sink; /* keeps the spin loop from being optimised away */
static char *held;              /* the mem phase's block, resident until exit */

#define SAMPLE_EVERY_USEC (50U * USEC_PER_MSEC)

static void sample(FILE *stamps) {
        fprintf(stamps, "sample t=%llu cpu=%llu\n", (unsigned long long) now_usec(CLOCK_MONOTONIC),
                (unsigned long long) now_usec(CLOCK_PROCESS_CPUTIME_ID));
}

static void burn_until(FILE *stamps, usec_t end) {
        usec_t next_sample = now_usec(CLOCK_MONOTONIC) + SAMPLE_EVERY_USEC, now;
        uint64_t x = 1;

        while ((now = now_usec(CLOCK_MONOTONIC)) < end) {
                for (unsigned i = 0; i < 10000; i++)
                        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                if (now >= next_sample) {
                        sample(stamps); /* a few microseconds per 50 ms: the burn stays a burn */
                        next_sample += SAMPLE_EVERY_USEC;
                }
        }
        sink = x;
}

static void idle_until(usec_t end) {
        struct timespec ts = { .tv_sec = (time_t) (end / USEC_PER_SEC),
                               .tv_nsec = (long) (end % USEC_PER_SEC * NSEC_PER_USEC) };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

static int hold_memory(const char *size_s) {
        uint64_t size;
        char *p;
        int r;

        r = parse_size(size_s, &size);
        if (r < 0)
                return log_error_errno(r, "Invalid size '%s': %m", size_s);
        p = realloc(held, size);
        if (!p)
                return log_error_errno(-ENOMEM, "Cannot allocate %s", size_s);
        memset(p, 0x5a, size); /* touched: resident, not just reserved */
        held = p;
        return 0;
}

static int run_phase(FILE *stamps, const char *phase) {
        const char *colon = strchr(phase, ':');
        usec_t start = now_usec(CLOCK_MONOTONIC), span;
        char name[16];
        int r;

        if (!colon || (size_t) (colon - phase) >= sizeof name)
                return log_error_errno(-EINVAL, "Invalid phase '%s' (want burn:D, idle:D or mem:SIZE)",
                                       phase);
        snprintf(name, sizeof name, "%.*s", (int) (colon - phase), phase);
        sample(stamps);
        if (streq(name, "mem"))
                r = hold_memory(colon + 1);
        else {
                r = parse_duration(colon + 1, &span);
                if (r < 0)
                        return log_error_errno(r, "Invalid duration in '%s': %m", phase);
                if (streq(name, "burn"))
                        burn_until(stamps, start + span);
                else if (streq(name, "idle"))
                        idle_until(start + span);
                else
                        return log_error_errno(-EINVAL, "Unknown phase '%s'", name);
        }
        if (r < 0)
                return r;
        sample(stamps);
        fprintf(stamps, "%s start=%llu end=%llu\n", name, (unsigned long long) start,
                (unsigned long long) now_usec(CLOCK_MONOTONIC));
        fflush(stamps);
        return 0;
}

int main(int argc, char *argv[]) {
        FILE *stamps = stdout;
        int i = 1;

        log_setup("ep-burn", NULL);
        if (argc > 2 && streq(argv[1], "--stamps")) {
                stamps = fopen(argv[2], "we");
                if (!stamps) {
                        log_error_errno(-errno, "Cannot open '%s': %m", argv[2]);
                        return 1;
                }
                i = 3;
        }
        for (; i < argc; i++)
                if (run_phase(stamps, argv[i]) < 0)
                        break;
        if (stamps != stdout)
                fclose(stamps);
        free(held);
        return i < argc ? 1 : 0;
}
