/* SPDX-License-Identifier: MIT */
#pragma once

/* The burst path (DESIGN.md, policy 6): growth only, on signals that show saturation within a second,
 * while the smoothed window keeps governing compaction. Per routable worker, requests WAITING for it,
 * wherever they wait:
 *
 *   accept queue    connections in its listening socket's accept queue (sock_diag)
 *   forward queue   requests queued in the commander for a free connection to it (the front end)
 *   executor queue  requests it read and queued for an executor (its sensor; reported early on a crossing)
 *
 * The three are disjoint (a request waits in one place at a time), so they add up. A worker is saturated
 * while its waiting requests reach burst_queue; when EVERY routable worker has been saturated without a
 * break for burst_window, the pool needs another worker: policy_scale_up_burst() (policy.h) spawns it
 * through the guards of scale-up. One hot worker beside an idle one is not growth's business: its users
 * are sticky, and relief moves (or placement of the next users) use the idle one.
 *
 * Missing is never zero, nor full: a signal a worker offers but whose reading is not current (its
 * reports stopped, sock_diag lost its socket) breaks its saturated streak and, where the decision rests
 * on it, HOLDS it with the reason. A signal a worker never offers (no executor counters, no front end) is
 * not an input. Pure: no I/O, no clock; the capacity shell samples and passes now. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "time-util.h"

typedef enum BurstSignal {
        BURST_ACCEPT_QUEUE,
        BURST_FORWARD_QUEUE,
        BURST_EXECUTOR_QUEUE,
        _BURST_SIGNAL_MAX,
        _BURST_SIGNAL_INVALID = -EINVAL,
} BurstSignal;

/* "accept queue", "forward queue", "executor queue". */
const char *burst_signal_to_string(BurstSignal s);

typedef enum BurstAvailability {
        BURST_ABSENT,  /* the worker does not offer it: not an input */
        BURST_CURRENT, /* read now */
        BURST_LATE,    /* offered, but no current reading: breaks the streak, may hold */
} BurstAvailability;

/* One sample of one worker's signals. */
typedef struct BurstSample {
        BurstAvailability availability[_BURST_SIGNAL_MAX];
        uint32_t value[_BURST_SIGNAL_MAX]; /* BURST_CURRENT only */
        usec_t late_since[_BURST_SIGNAL_MAX]; /* BURST_LATE: the last current reading (0: never) */
} BurstSample;

typedef struct BurstParams {
        usec_t window;   /* burst_window: how long every worker must stay saturated; 0 = the path is off */
        uint32_t queue;  /* burst_queue: waiting requests that make a worker saturated (>= 1) */
        usec_t gap_max;  /* two samples further apart than this do not make a streak (a stalled loop) */
} BurstParams;

/* What the samples of one worker made so far. */
typedef struct BurstTrack {
        usec_t last;        /* the last sample; 0: none yet */
        usec_t over_since;  /* saturated in every sample since; 0: not saturated now */
        uint32_t waiting;   /* requests waiting at the last sample (its current signals) */
        uint32_t value[_BURST_SIGNAL_MAX];
        bool current[_BURST_SIGNAL_MAX];
        int late;           /* a signal that was late at the last sample (BurstSignal), -1: none */
        usec_t late_since;  /* its last current reading (0: never) */
} BurstTrack;

/* A track that has seen nothing. */
#define BURST_TRACK_INIT ((BurstTrack) { .late = -1 })

/* Takes a sample at now into t: a late signal or a gap over gap_max breaks the streak; otherwise the
 * streak goes on while waiting >= queue. */
void burst_observe(BurstTrack *t, const BurstSample *s, const BurstParams *p, usec_t now);

/* One worker on its own: the path on, its last sample current at now (within gap_max, no signal late),
 * and saturated in every sample for burst_window. A spike so far, or a missing reading, is not. */
bool burst_track_sustained(const BurstTrack *t, const BurstParams *p, usec_t now);

typedef enum BurstStatus {
        BURST_OFF,       /* burst_window = 0 */
        BURST_CALM,      /* a routable worker is not saturated, or none is routable */
        BURST_RISING,    /* every routable worker saturated, not yet for burst_window */
        BURST_SUSTAINED, /* every routable worker saturated for burst_window: a worker is wanted */
        BURST_HELD,      /* no worker shown unsaturated, and one's signal is late: cannot tell */
        _BURST_STATUS_MAX,
        _BURST_STATUS_INVALID = -EINVAL,
} BurstStatus;

const char *burst_status_to_string(BurstStatus s);
BurstStatus burst_status_from_string(const char *s);

typedef struct BurstReading {
        BurstStatus status;
        int culprit;       /* HELD: the worker whose signal is late; CALM: the worker with room; -1 */
        usec_t since;      /* HELD: the culprit's last current reading; RISING/SUSTAINED: when the
                            * streak of every worker began */
        usec_t span;       /* RISING/SUSTAINED: how long that streak has lasted at this assessment */
        char reason[224];  /* e.g. "burst: w1 w2 waiting 12/8 (executor queue 9, accept queue 3) for 1.6s" */
} BurstReading;

/* One routable worker as the assessment sees it. */
typedef struct BurstWorker {
        unsigned id;
        BurstTrack track;
} BurstWorker;

/* The burst reading of the routable workers w[0..n) at now, in order: the path off → OFF; no worker →
 * CALM; a worker with a current sample under queue → CALM (it has room; named); a worker whose signal is
 * late → HELD on the first such one; else every worker saturated: SUSTAINED once the latest of their
 * streaks is burst_window old, RISING before. */
void burst_assess(const BurstWorker *w, size_t n, const BurstParams *p, usec_t now, BurstReading *ret);
