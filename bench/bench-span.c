/* SPDX-License-Identifier: MIT */
#include "bench-span.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double bench_cpu_seconds(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static double wall_seconds(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* The "cpu" line of /proc/stat: user nice system idle iowait irq softirq steal. */
static void machine_ticks(unsigned long long *ret_busy, unsigned long long *ret_steal) {
        unsigned long long v[8] = {};
        FILE *f = fopen("/proc/stat", "re");

        if (f) {
                if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                           &v[6], &v[7]) != 8)
                        memset(v, 0, sizeof v);
                fclose(f);
        }
        *ret_busy = v[0] + v[1] + v[2];
        *ret_steal = v[7];
}

void bench_span_begin(BenchSpan *s) {
        machine_ticks(&s->busy, &s->steal);
        s->cpu = bench_cpu_seconds();
        s->wall = wall_seconds();
}

bool bench_span_end(const BenchSpan *s, double *ret_other, double *ret_steal) {
        double hz = (double) sysconf(_SC_CLK_TCK), wall = wall_seconds() - s->wall, cpu = bench_cpu_seconds() - s->cpu;
        const char *e = getenv("BENCH_DISTURBED");
        double limit = e ? atof(e) : 5.0, other;
        unsigned long long busy, steal;

        machine_ticks(&busy, &steal);
        if (wall <= 0)
                wall = 1e-9;
        other = ((double) (busy - s->busy) / hz - cpu) * 100.0 / wall;
        *ret_other = other < 0 ? 0 : other;
        *ret_steal = (double) (steal - s->steal) / hz * 100.0 / wall;
        return *ret_other + *ret_steal > limit;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return (x > y) - (x < y);
}

double bench_quiet_median(const double *v, const bool *disturbed, size_t n, size_t *ret_quiet) {
        double *w = calloc(n ? n : 1, sizeof *w);
        size_t k = 0;
        double m;

        if (!w)
                abort();
        for (size_t i = 0; i < n; i++)
                if (!disturbed[i])
                        w[k++] = v[i];
        *ret_quiet = k;
        if (k == 0) {
                memcpy(w, v, n * sizeof *w);
                k = n;
        }
        qsort(w, k, sizeof *w, cmp_double);
        m = k == 0 ? 0 : k % 2 ? w[k / 2] : (w[k / 2 - 1] + w[k / 2]) / 2;
        free(w);
        return m;
}

unsigned bench_rounds(unsigned def) {
        const char *e = getenv("BENCH_ROUNDS");
        int n = e ? atoi(e) : 0;

        if (n <= 0)
                return def;
        return (unsigned) n < BENCH_ROUNDS_MAX ? (unsigned) n : BENCH_ROUNDS_MAX;
}
