/* SPDX-License-Identifier: MIT */
#include "executor.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "cleanup.h"

typedef struct ExecutorThread {
        Executor *executor;
        pthread_t thread;
        void *data;
} ExecutorThread;

struct Executor {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        ExecutorJob *head, *tail;
        unsigned n_idle; /* threads waiting on cond: only then is a signal worth its syscall */
        bool stop;

        executor_run_t run;
        void *userdata;
        unsigned n_threads, n_started;
        ExecutorThread threads[];
};

static ExecutorJob *take_job(Executor *e) {
        ExecutorJob *j;

        pthread_mutex_lock(&e->lock);
        while (!e->head && !e->stop) {
                e->n_idle++;
                pthread_cond_wait(&e->cond, &e->lock);
                e->n_idle--;
        }
        j = e->head;
        if (j) {
                e->head = j->next;
                if (!e->head)
                        e->tail = NULL;
                j->next = NULL;
        }
        pthread_mutex_unlock(&e->lock);
        return j; /* NULL only when stopping with an empty queue */
}

static void *thread_main(void *p) {
        ExecutorThread *t = p;
        ExecutorJob *j;

        while ((j = take_job(t->executor)))
                t->executor->run(j, t->data, t->executor->userdata);
        return NULL;
}

void executor_submit(Executor *e, ExecutorJob *job) {
        bool wake;

        pthread_mutex_lock(&e->lock);
        /* Under the lock although we own the job: the executor that last ran it handed it back through
         * epoll, an ordering the thread sanitizer cannot see. */
        job->next = NULL;
        if (e->tail)
                e->tail->next = job;
        else
                e->head = job;
        e->tail = job;
        wake = e->n_idle > 0;
        pthread_mutex_unlock(&e->lock);
        if (wake)
                pthread_cond_signal(&e->cond);
}

int executor_new(unsigned n_threads, void *const *thread_data, executor_run_t run, void *userdata,
                 Executor **ret) {
        Executor *e;

        if (n_threads == 0 || !run)
                return -EINVAL;
        e = calloc(1, sizeof(Executor) + n_threads * sizeof(ExecutorThread));
        if (!e)
                return -ENOMEM;
        pthread_mutex_init(&e->lock, NULL);
        pthread_cond_init(&e->cond, NULL);
        e->run = run;
        e->userdata = userdata;
        e->n_threads = n_threads;

        for (unsigned i = 0; i < n_threads; i++) {
                int r;

                e->threads[i] = (ExecutorThread) {
                        .executor = e,
                        .data = thread_data ? thread_data[i] : NULL,
                };
                r = pthread_create(&e->threads[i].thread, NULL, thread_main, &e->threads[i]);
                if (r != 0) {
                        executor_free(e);
                        return -r;
                }
                e->n_started++;
        }
        *ret = e;
        return 0;
}

Executor *executor_free(Executor *e) {
        if (!e)
                return NULL;
        pthread_mutex_lock(&e->lock);
        e->stop = true;
        pthread_mutex_unlock(&e->lock);
        pthread_cond_broadcast(&e->cond);
        for (unsigned i = 0; i < e->n_started; i++)
                (void) pthread_join(e->threads[i].thread, NULL);
        pthread_cond_destroy(&e->cond);
        pthread_mutex_destroy(&e->lock);
        free(e);
        return NULL;
}
