/* SPDX-License-Identifier: MIT */
#pragma once

/* A fixed pool of executor threads fed through one FIFO. Jobs are intrusive (an ExecutorJob embedded
 * in the caller's object), so submitting never allocates; a job is in the queue at most once, which
 * the caller guarantees (the demo worker submits a connection only when its EPOLLONESHOT fires). */

#include <stddef.h>

typedef struct ExecutorJob {
        struct ExecutorJob *next;
} ExecutorJob;

/* Runs one job on an executor thread. thread_data is the element of the array given to executor_new()
 * that belongs to the running thread (per-thread scratch buffers, no locking needed). */
typedef void (*executor_run_t)(ExecutorJob *job, void *thread_data, void *userdata);

typedef struct Executor Executor;

/* Starts n_threads threads; thread_data has n_threads elements (entries may be NULL).
 * Returns 0, -EINVAL, -ENOMEM, or the error of pthread_create() negated. */
int executor_new(unsigned n_threads, void *const *thread_data, executor_run_t run, void *userdata,
                 Executor **ret);
void executor_submit(Executor *e, ExecutorJob *job);
/* Lets the threads run what is queued, then joins them. Accepts NULL; returns NULL. */
Executor *executor_free(Executor *e);
