/* SPDX-License-Identifier: MIT */
#pragma once

/* The C benchmarks' side of bench/bench-lib.sh's span_begin/span_end: a round measured together with
 * what else ran on the machine meanwhile. other% is the CPU time the machine's processes took beside
 * this process's own (/proc/stat user + nice + system, minus CLOCK_PROCESS_CPUTIME_ID), steal% the time
 * the hypervisor took from this virtual machine (/proc/stat steal), both in % of one CPU over the
 * round's wall time; a round is disturbed when the two together pass BENCH_DISTURBED (5). /proc/stat
 * counts in clock ticks (10 ms): rounds shorter than about a second read coarsely. */

#include <stdbool.h>
#include <stddef.h>

typedef struct BenchSpan {
        unsigned long long busy, steal; /* clock ticks, the whole machine */
        double wall, cpu;               /* seconds: CLOCK_MONOTONIC, this process's CPU */
} BenchSpan;

/* This process's CPU time in seconds. */
double bench_cpu_seconds(void);

void bench_span_begin(BenchSpan *s);

/* Ends the round begun with s: its other% and steal%; true when it was disturbed. */
bool bench_span_end(const BenchSpan *s, double *ret_other, double *ret_steal);

/* The median of v[i] over the rounds not disturbed (ret_quiet: how many); over all n when none was
 * quiet (ret_quiet 0). */
double bench_quiet_median(const double *v, const bool *disturbed, size_t n, size_t *ret_quiet);

#define BENCH_ROUNDS_MAX 64U

/* BENCH_ROUNDS from the environment (at most BENCH_ROUNDS_MAX), or def. */
unsigned bench_rounds(unsigned def);
