/* SPDX-License-Identifier: MIT */
#pragma once

/* A Manager in memory for the pool, capacity and status tests, set up like bench/commander-report-cost.c:
 * the parameters of config_init_defaults(), Worker objects with open channels (the peer ends kept
 * here) and no processes, the "none" backend, and spawning given up so a wanted spawn is decided and
 * journaled but never started.
 *
 * The commander reads CLOCK_MONOTONIC through now_usec(); these tests link with -Wl,--wrap=now_usec and
 * the wrapper below answers fixture_now for it, so time passes only when a test says so. */

#include <stdbool.h>
#include <stdint.h>

#include "capacity.h"
#include "manager.h"
#include "pool.h"

#define FIXTURE_T0 (1000 * USEC_PER_SEC)

extern usec_t fixture_now;

usec_t __wrap_now_usec(clockid_t clock);
usec_t __real_now_usec(clockid_t clock);

Manager *fixture_manager_new(void);
void fixture_manager_free(Manager *m);

/* A worker with the next id in state, spawned (and, once routable, made routable) at fixture_now. The
 * first routable one becomes the reception. */
Worker *fixture_add_worker(Manager *m, WorkerState state);

/* The peer end of w's channel (what the worker process would read). */
int fixture_peer(const Worker *w);

/* Places n logged-in users on w (named "w<id>-<k>", replacing any it had) in the manager's surface: the
 * one record of who lives where. */
void fixture_set_users(Manager *m, Worker *w, unsigned n);

/* One report as a sensor sends it; a negative value leaves the field out. */
typedef struct FixtureReading {
        double cpu;        /* fraction of a core */
        double memory;     /* bytes */
        int busy, total;   /* executor */
} FixtureReading;

/* READING(.cpu = 0.5): every field not named is absent (the defaults are overridden on purpose). */
#define READING(...)                                                                                    \
        ({                                                                                              \
                _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Woverride-init\"")    \
                FixtureReading _r = { .cpu = -1, .memory = -1, .busy = -1, .total = -1, __VA_ARGS__ };  \
                _Pragma("GCC diagnostic pop") _r;                                                       \
        })

/* Delivers the report through pool_handle_frame(), as the channel would. */
void fixture_report(Worker *w, FixtureReading r);
/* A Hello with the given interval (0: none announced) and protocol version. */
void fixture_hello(Worker *w, uint64_t interval_usec, uint32_t protocol);

/* What w's worker would read: the next frame on the peer end of its channel, which must be of body
 * `expect` (the caller frees it), and whether any byte waits there. */
Frame *fixture_read_frame(const Worker *w, ElasticPool__Frame__BodyCase expect);
bool fixture_frame_pending(const Worker *w);

/* A worker's answers to a move, delivered through pool_handle_frame(): a Package of blob (NULL: none,
 * with error) and an InstallResult. */
void fixture_package(Worker *from, uint64_t move_id, const char *blob, const char *error);
void fixture_install_result(Worker *to, uint64_t move_id, bool ok, const char *error);

/* The channel closed (EOF, bad frame) as pool.c records it: freed, closed_at now, summary invalid. */
void fixture_close_channel(Worker *w);

void fixture_advance(usec_t delta);

/* assert_true() with the story of what went wrong, for checks whose failure needs explaining. */
#define CHECK_EXPLAINED(cond, ...)                                                       \
        do {                                                                             \
                if (!(cond))                                                             \
                        fixture_check_failed(__FILE__, __LINE__, #cond, __VA_ARGS__);    \
        } while (0)

void fixture_check_failed(const char *file, int line, const char *check, const char *format, ...)
        __attribute__((format(printf, 4, 5)));
