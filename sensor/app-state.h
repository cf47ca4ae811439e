/* SPDX-License-Identifier: MIT */
#pragma once

/* What the application tells the sensor, written from any thread. Counters are atomics (the setters sit on
 * the application's request path and must not contend); the distinct active users of the current interval
 * sit in a small mutex-protected set of 64-bit user hashes. A field the application never set stays
 * absent in every report. */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One report's application fields. The executor and backlog groups are all-or-nothing. */
typedef struct AppFields {
        bool has_users, has_pages, has_connections, has_active_users, has_executor, has_backlog;
        uint32_t users, pages, connections, active_users;
        uint32_t busy, total, queue_depth;
        uint64_t pending, outbox;
} AppFields;

/* Open-addressing set of user hashes (0 marks an empty slot). */
typedef struct ActiveSet {
        uint64_t *slots;
        size_t capacity, count;
        bool overflow; /* could not grow: the count of this interval is unknown */
} ActiveSet;

typedef struct AppState {
        _Atomic uint32_t present; /* APP_FIELD_* bits of the fields ever set */
        _Atomic uint32_t users, pages, connections;
        _Atomic uint32_t busy, total, queue_depth;
        _Atomic uint64_t pending, outbox;
        pthread_mutex_t active_lock;
        ActiveSet active;
} AppState;

void app_state_init(AppState *a);
void app_state_done(AppState *a);

void app_state_set_users(AppState *a, uint32_t v);
void app_state_set_pages(AppState *a, uint32_t v);
void app_state_set_connections(AppState *a, uint32_t v);
/* Counts user once per interval unless system is set (or user is NULL); either way active_users is
 * reported from now on, since the application evidently tracks activity. */
void app_state_user_active(AppState *a, const char *user, bool system);
void app_state_set_executor(AppState *a, uint32_t busy, uint32_t total, uint32_t queue_depth);
void app_state_set_executor_total(AppState *a, uint32_t total);
/* Decrements saturate at 0, so an application that never calls request_queued() can still use begin/end. */
void app_state_request_queued(AppState *a);
void app_state_request_begin(AppState *a);
void app_state_request_end(AppState *a);
void app_state_set_backlog(AppState *a, uint64_t pending, uint64_t outbox);

/* Whether the application has set any field yet (the APPLICATION_FIELDS capability). */
bool app_state_any_set(AppState *a);

/* Takes this interval's fields and starts the next interval (the active-user set is emptied). The three
 * executor counters are each exact but not read at one instant: a request moving between them may be seen
 * in neither or both. */
void app_state_snapshot(AppState *a, AppFields *ret);
