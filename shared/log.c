/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
/* the CODE_FILE/CODE_LINE sd-journal would add are this file's, which tells nobody anything */
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-journal.h>
#include <time.h>

#include "cleanup.h"

static const char *log_identifier = "elastic-pool";
static const char *log_group = NULL;
static LogTarget log_target = LOG_TARGET_AUTO;
static int log_max_level = LOG_INFO;

void log_setup(const char *identifier, const char *group) {
        const char *e;

        if (identifier)
                log_identifier = identifier;
        log_group = group;

        e = getenv("EP_LOG_TARGET");
        if (e && streq(e, "journal"))
                log_target = LOG_TARGET_JOURNAL;
        else if (e && streq(e, "stderr"))
                log_target = LOG_TARGET_STDERR;

        e = getenv("EP_LOG_LEVEL");
        if (e) {
                int l = log_level_from_string(e);
                if (l >= 0)
                        log_max_level = l;
        }
}

void log_set_target(LogTarget target) {
        log_target = target;
}

void log_set_max_level(int level) {
        log_max_level = level;
}

int log_get_max_level(void) {
        return log_max_level;
}

int log_level_from_string(const char *s) {
        static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(s, names[i]))
                        return (int) i;
        if (streq(s, "error"))
                return LOG_ERR;
        if (s[0] >= '0' && s[0] <= '7' && s[1] == 0)
                return s[0] - '0';
        return -EINVAL;
}

/* systemd sets JOURNAL_STREAM to the device:inode of the stream it connected stderr to; only when it
 * still matches fd 2 are we talking to journald (a child may have redirected stderr since). */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == dev && st.st_ino == ino;
}

static bool use_journal(void) {
        static int cached = -1;

        if (log_target == LOG_TARGET_JOURNAL)
                return true;
        if (log_target == LOG_TARGET_STDERR)
                return false;
        if (cached < 0)
                cached = stderr_is_journal();
        return cached;
}

static void log_to_stderr(int level, const LogFields *fields, const char *message) {
        static const char *const prefix[] = { "EMERG: ", "ALERT: ", "CRIT: ", "ERROR: ", "WARNING: ", "", "", "" };
        char tag[96] = "";
        struct timespec ts;
        struct tm tm;

        if (fields && fields->event) {
                if (fields->worker > 0)
                        snprintf(tag, sizeof tag, "[%s w%d] ", fields->event, fields->worker);
                else
                        snprintf(tag, sizeof tag, "[%s] ", fields->event);
        }
        clock_gettime(CLOCK_REALTIME, &ts);
        localtime_r(&ts.tv_sec, &tm);
        fprintf(stderr, "%02d:%02d:%02d.%03ld %s%s%s: %s%s%s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
                ts.tv_nsec / 1000000, log_identifier, log_group ? "@" : "", strempty(log_group),
                prefix[CLAMP(level, 0, 7)], tag, message);
}

static void log_to_journal(int level, int error, const LogFields *fields, const char *message) {
        char priority[16], errno_field[24], worker[32], occupancy[48], ident[64], group[128];
        char *user = NULL, *event = NULL, *mid = NULL, *msg = NULL;
        _cleanup_free_ char *extra_copy = NULL;
        struct iovec iov[48];
        size_t n = 0;

#define IOV_STR(s) iov[n++] = (struct iovec) { .iov_base = (char *) (s), .iov_len = strlen(s) }
        if (asprintf(&msg, "MESSAGE=%s", message) < 0)
                return;
        IOV_STR(msg);
        snprintf(priority, sizeof priority, "PRIORITY=%d", level);
        IOV_STR(priority);
        snprintf(ident, sizeof ident, "SYSLOG_IDENTIFIER=%s", log_identifier);
        IOV_STR(ident);
        if (log_group) {
                snprintf(group, sizeof group, "EP_GROUP=%s", log_group);
                IOV_STR(group);
        }
        if (error != 0) {
                snprintf(errno_field, sizeof errno_field, "ERRNO=%d", ERRNO_VALUE(error));
                IOV_STR(errno_field);
        }
        if (fields) {
                if (fields->message_id && asprintf(&mid, "MESSAGE_ID=%s", fields->message_id) >= 0)
                        IOV_STR(mid);
                if (fields->event && asprintf(&event, "EP_EVENT=%s", fields->event) >= 0)
                        IOV_STR(event);
                if (fields->user && asprintf(&user, "EP_USER=%s", fields->user) >= 0)
                        IOV_STR(user);
                if (fields->worker > 0) {
                        snprintf(worker, sizeof worker, "EP_WORKER=w%d", fields->worker);
                        IOV_STR(worker);
                }
                if (fields->has_occupancy) {
                        snprintf(occupancy, sizeof occupancy, "EP_OCCUPANCY=%.3f", fields->occupancy);
                        IOV_STR(occupancy);
                }
                if (fields->extra && (extra_copy = strdup(fields->extra))) {
                        char *save = NULL;
                        for (char *f = strtok_r(extra_copy, "\n", &save); f && n < ELEMENTSOF(iov);
                             f = strtok_r(NULL, "\n", &save))
                                IOV_STR(f);
                }
        }
#undef IOV_STR
        (void) sd_journal_sendv(iov, (int) n);
        free(msg);
        free(mid);
        free(event);
        free(user);
}

int log_internalv(int level, int error, const LogFields *fields, const char *format, va_list ap) {
        char buf[4096];
        int saved = errno;

        if (error != 0)
                errno = ERRNO_VALUE(error); /* so that %m names the error being logged */
        vsnprintf(buf, sizeof buf, format, ap);

        if (use_journal())
                log_to_journal(level, error, fields, buf);
        else
                log_to_stderr(level, fields, buf);

        errno = saved;
        return error != 0 ? -ERRNO_VALUE(error) : 0;
}

int log_internal(int level, int error, const LogFields *fields, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = log_internalv(level, error, fields, format, ap);
        va_end(ap);
        return r;
}
