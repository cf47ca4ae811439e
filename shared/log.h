/* SPDX-License-Identifier: MIT */
#pragma once

/* One logging layer for the commander, the sensor wrapper and the tools. Under journald (stderr is the
 * journal stream, or EP_LOG_TARGET=journal) every entry goes out with sd_journal_send() and our
 * structured EP_* fields; otherwise as one line on stderr. */

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

typedef enum LogTarget {
        LOG_TARGET_AUTO,
        LOG_TARGET_JOURNAL,
        LOG_TARGET_STDERR,
        _LOG_TARGET_MAX,
        _LOG_TARGET_INVALID = -EINVAL,
} LogTarget;

/* Structured fields of one entry. Unset members are left out: NULL strings, worker 0 (ids start at 1),
 * has_occupancy false.
 * `extra` holds further "KEY=VALUE" fields separated by '\n' (the inputs of a decision, say). */
typedef struct LogFields {
        const char *message_id; /* 32 hex digits, documented in the journal catalog */
        const char *event;      /* EP_EVENT: spawn, ready, death, place, move, compact, scale-up, held, ... */
        int worker;             /* EP_WORKER=w<worker> when > 0 */
        const char *user;       /* EP_USER */
        bool has_occupancy;
        double occupancy;       /* EP_OCCUPANCY */
        const char *extra;
} LogFields;

#define LOG_FIELDS(...) (&(const LogFields) { __VA_ARGS__ })

void log_setup(const char *identifier, const char *group);
void log_set_target(LogTarget target);
void log_set_max_level(int level);
int log_get_max_level(void);
/* Parses "debug", "info", ... or a number 0..7; returns the level or -EINVAL. */
int log_level_from_string(const char *s);

/* Returns -abs(error) when error != 0 so callers can "return log_error_errno(r, ...)", else 0. */
int log_internal(int level, int error, const LogFields *fields, const char *format, ...) _printf_(4, 5);
int log_internalv(int level, int error, const LogFields *fields, const char *format, va_list ap)
        _printf_(4, 0);

#define log_full_errno(level, error, ...)                                                        \
        ({                                                                                       \
                int _l = (level), _e = (error);                                                  \
                _l <= log_get_max_level() ? log_internal(_l, _e, NULL, __VA_ARGS__) : -ERRNO_VALUE(_e); \
        })

#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define log_notice_errno(e, ...) log_full_errno(LOG_NOTICE, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, e, __VA_ARGS__)
#define log_oom() log_error_errno(ENOMEM, "Out of memory.")

/* An entry with structured fields: log_struct(LOG_INFO, LOG_FIELDS(.event = "spawn", .worker = 3), "...").
 * Filtered by the maximum level like every other entry. */
#define log_struct_errno(level, error, fields, ...)                                              \
        ({                                                                                       \
                int _l = (level), _e = (error);                                                  \
                _l <= log_get_max_level() ? log_internal(_l, _e, fields, __VA_ARGS__) : -ERRNO_VALUE(_e); \
        })
#define log_struct(level, fields, ...) log_struct_errno(level, 0, fields, __VA_ARGS__)
