/* SPDX-License-Identifier: MIT */

/* Debian's libinih is built with INI_HANDLER_LINENO=1, and the prototype has to match the library's
 * build. We do not rely on the number it passes, though: our reader counts lines itself, so a library
 * built without it would only hand us an unused garbage argument. */
#define INI_HANDLER_LINENO 1

#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "cleanup.h"
#include "config-worker.h"
#include "macro.h"
#include "parse-util.h"

#ifndef EP_DEMO_WORKER_PATH
#define EP_DEMO_WORKER_PATH "/usr/bin/elastic-pool-demo-worker"
#endif

#define DEFAULT_LISTEN "127.0.0.1:8080"
#define ADDRESS_FORMS  "IPV4:PORT or [IPV6]:PORT"

/* ---- string lists ---- */

static char **strv_free(char **l) {
        for (char **i = l; i && *i; i++)
                free(*i);
        free(l);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)

static size_t strv_length(char *const *l) {
        size_t n = 0;

        while (l && l[n])
                n++;
        return n;
}

/* Appends value, taking ownership of it (freed on failure too). 0 or -ENOMEM. */
static int strv_consume(char ***l, char *value) {
        size_t n = strv_length(*l);
        char **t;

        if (!value)
                return -ENOMEM;
        t = realloc(*l, (n + 2) * sizeof(char *));
        if (!t) {
                free(value);
                return -ENOMEM;
        }
        t[n] = value;
        t[n + 1] = NULL;
        *l = t;
        return 0;
}

static bool isempty(const char *s) {
        return !s || *s == 0;
}

/* Sets *ret_reason and returns -EINVAL, for parsers that explain their refusal. */
static int refuse(const char **ret_reason, const char *reason) {
        *ret_reason = reason;
        return -EINVAL;
}

/* ---- the key table ---- */

static const char *const backend_kind_table[_BACKEND_KIND_MAX] = {
        [BACKEND_AUTO] = "auto",
        [BACKEND_SCOPE] = "scope",
        [BACKEND_CGROUP] = "cgroup",
        [BACKEND_NONE] = "none",
};

const char *backend_kind_to_string(BackendKind k) {
        return k >= 0 && k < _BACKEND_KIND_MAX ? backend_kind_table[k] : NULL;
}

BackendKind backend_kind_from_string(const char *s) {
        for (BackendKind k = 0; s && k < _BACKEND_KIND_MAX; k++)
                if (streq(s, backend_kind_table[k]))
                        return k;
        return _BACKEND_KIND_INVALID;
}

static const char *const reload_state_table[_RELOAD_STATE_MAX] = {
        [RELOAD_STATE_REPOINT] = "repoint",
        [RELOAD_STATE_REQUIRE_COMPATIBLE] = "require-compatible",
};

const char *reload_state_to_string(ReloadState s) {
        return s >= 0 && s < _RELOAD_STATE_MAX ? reload_state_table[s] : NULL;
}

ReloadState reload_state_from_string(const char *s) {
        for (ReloadState k = 0; s && k < _RELOAD_STATE_MAX; k++)
                if (streq(s, reload_state_table[k]))
                        return k;
        return _RELOAD_STATE_INVALID;
}

typedef enum ValueType {
        VALUE_EXEC,
        VALUE_SIZE,
        VALUE_DURATION,
        VALUE_UINT32,
        VALUE_DOUBLE,
        VALUE_BACKEND,
        VALUE_RELOAD_STATE,
        VALUE_MAX_WORKERS, /* uint32, 0/""/"unbounded" = unbounded */
        VALUE_LISTEN,
        VALUE_ADMIN_LISTEN,
        VALUE_PATH, /* an absolute path; empty = none */
        VALUE_PREFIXES,
        VALUE_BOOL,
        VALUE_ENVIRONMENT,      /* KEY=VALUE words; appends, "" resets */
        VALUE_ENVIRONMENT_FILE, /* absolute path, '-' in front: may be missing; "" = none */
        VALUE_DIRECTORY,        /* absolute path; "" = none */
        VALUE_IDENTITY,         /* user or group name or number; "" = the commander's */
} ValueType;

typedef enum Rule {
        RULE_NONE,
        RULE_POSITIVE,     /* > 0 */
        RULE_FRACTION,     /* (0, 1] */
        RULE_AT_LEAST_ONE, /* >= 1 */
        RULE_ROWS,         /* 1 .. CONFIG_WINDOW_ROWS_MAX */
        RULE_NOT_NEGATIVE, /* >= 0 */
} Rule;

typedef struct KeyInfo {
        const char *section;
        const char *name;
        ValueType type;
        Rule rule;
        size_t offset;
} KeyInfo;

/* The key's name is its Config member's name, so the two cannot drift apart. */
#define KEY(id, sec, member, t, r) \
        [CONFIG_KEY_##id] = {      \
                .section = sec, .name = #member, .type = t, .rule = r, .offset = offsetof(Config, member)}

static const KeyInfo key_table[_CONFIG_KEY_MAX] = {
        KEY(EXEC, "worker", exec, VALUE_EXEC, RULE_NONE),
        KEY(MEMORY_LIMIT, "worker", memory_limit, VALUE_SIZE, RULE_NONE),
        KEY(CPU_WALL_CORES, "worker", cpu_wall_cores, VALUE_DOUBLE, RULE_POSITIVE),
        KEY(CONCURRENCY, "worker", concurrency, VALUE_UINT32, RULE_NONE),
        KEY(ENVIRONMENT, "worker", environment, VALUE_ENVIRONMENT, RULE_NONE),
        KEY(ENVIRONMENT_FILE, "worker", environment_file, VALUE_ENVIRONMENT_FILE, RULE_NONE),
        KEY(WORKING_DIRECTORY, "worker", working_directory, VALUE_DIRECTORY, RULE_NONE),
        KEY(USER, "worker", user, VALUE_IDENTITY, RULE_NONE),
        KEY(GROUP, "worker", group, VALUE_IDENTITY, RULE_NONE),
        KEY(BACKEND, "pool", backend, VALUE_BACKEND, RULE_NONE),
        KEY(MIN_WORKERS, "pool", min_workers, VALUE_UINT32, RULE_POSITIVE),
        KEY(MAX_WORKERS, "pool", max_workers, VALUE_MAX_WORKERS, RULE_NONE),
        KEY(MIN_FREE_MEMORY, "pool", min_free_memory, VALUE_SIZE, RULE_NONE),
        KEY(SPAWN_TIMEOUT, "pool", spawn_timeout, VALUE_DURATION, RULE_POSITIVE),
        KEY(DRAIN_TIMEOUT, "pool", drain_timeout, VALUE_DURATION, RULE_POSITIVE),
        KEY(STOP_TIMEOUT, "pool", stop_timeout, VALUE_DURATION, RULE_POSITIVE),
        KEY(MOVE_TIMEOUT, "pool", move_timeout, VALUE_DURATION, RULE_NONE),
        KEY(READOPT, "pool", readopt, VALUE_BOOL, RULE_NONE),
        KEY(ADOPT_TIMEOUT, "pool", adopt_timeout, VALUE_DURATION, RULE_POSITIVE),
        KEY(HUNG_TIMEOUT, "pool", hung_timeout, VALUE_DURATION, RULE_NONE),
        KEY(UNANSWERED_LIMIT, "pool", unanswered_limit, VALUE_UINT32, RULE_NONE),
        KEY(RELOAD_STATE, "pool", reload_state, VALUE_RELOAD_STATE, RULE_NONE),
        KEY(RELOAD_TIMEOUT, "pool", reload_timeout, VALUE_DURATION, RULE_POSITIVE),
        KEY(RECEPTION_THRESHOLD, "policy", reception_threshold, VALUE_DOUBLE, RULE_FRACTION),
        KEY(ADMISSION_THRESHOLD, "policy", admission_threshold, VALUE_DOUBLE, RULE_FRACTION),
        KEY(COMPACTION_MARGIN, "policy", compaction_margin, VALUE_DOUBLE, RULE_AT_LEAST_ONE),
        KEY(OCCUPANCY_INTERVAL, "policy", occupancy_interval, VALUE_DURATION, RULE_POSITIVE),
        KEY(WINDOW_ROWS, "policy", window_rows, VALUE_UINT32, RULE_ROWS),
        KEY(SMOOTHING_ROWS, "policy", smoothing_rows, VALUE_UINT32, RULE_ROWS),
        KEY(STALE_AFTER, "policy", stale_after, VALUE_UINT32, RULE_POSITIVE),
        KEY(RELIEF_MOVES, "policy", relief_moves, VALUE_BOOL, RULE_NONE),
        KEY(RPS_TARGET, "policy", rps_target, VALUE_DOUBLE, RULE_NOT_NEGATIVE),
        KEY(RPS_UP_WINDOW, "policy", rps_up_window, VALUE_DURATION, RULE_POSITIVE),
        KEY(RPS_DOWN_WINDOW, "policy", rps_down_window, VALUE_DURATION, RULE_POSITIVE),
        KEY(DECISION_LOG, "policy", decision_log, VALUE_PATH, RULE_NONE),
        KEY(BURST_WINDOW, "policy", burst_window, VALUE_DURATION, RULE_NONE),
        KEY(BURST_QUEUE, "policy", burst_queue, VALUE_UINT32, RULE_POSITIVE),
        KEY(LISTEN, "frontend", listen, VALUE_LISTEN, RULE_NONE),
        KEY(ADMIN_LISTEN, "frontend", admin_listen, VALUE_ADMIN_LISTEN, RULE_NONE),
        KEY(ADMIN_ALLOW_PUBLIC, "frontend", admin_allow_public, VALUE_BOOL, RULE_NONE),
        KEY(ADMIN_POPULATION_TIMEOUT, "frontend", admin_population_timeout, VALUE_DURATION, RULE_POSITIVE),
        KEY(HEADER_TIMEOUT, "frontend", header_timeout, VALUE_DURATION, RULE_POSITIVE),
        KEY(IDLE_TIMEOUT, "frontend", idle_timeout, VALUE_DURATION, RULE_POSITIVE),
        KEY(RESPONSE_TIMEOUT, "frontend", response_timeout, VALUE_DURATION, RULE_POSITIVE),
        KEY(HOLD_TIMEOUT, "frontend", hold_timeout, VALUE_DURATION, RULE_POSITIVE),
        KEY(SHUTDOWN_TIMEOUT, "frontend", shutdown_timeout, VALUE_DURATION, RULE_POSITIVE),
        KEY(MAX_HEADER_SIZE, "frontend", max_header_size, VALUE_SIZE, RULE_POSITIVE),
        KEY(MAX_HEADER_FIELDS, "frontend", max_header_fields, VALUE_UINT32, RULE_POSITIVE),
        KEY(MAX_BODY_SIZE, "frontend", max_body_size, VALUE_SIZE, RULE_NONE),
        KEY(MAX_CONNECTIONS, "frontend", max_connections, VALUE_UINT32, RULE_POSITIVE),
        KEY(H2_MAX_CONCURRENT_STREAMS, "frontend", h2_max_concurrent_streams, VALUE_UINT32, RULE_POSITIVE),
        KEY(UPSTREAM_CONNECTIONS, "frontend", upstream_connections, VALUE_UINT32, RULE_POSITIVE),
        KEY(TRUSTED_PROXIES, "frontend", trusted_proxies, VALUE_PREFIXES, RULE_NONE),
        KEY(COOKIE_MAX_AGE, "frontend", cookie_max_age, VALUE_DURATION, RULE_POSITIVE),
        KEY(MAX_REVOKED_USERS, "frontend", max_revoked_users, VALUE_UINT32, RULE_POSITIVE),
        KEY(USER_EXPIRY, "frontend", user_expiry, VALUE_DURATION, RULE_NONE),
        KEY(WEBSOCKET, "frontend", websocket, VALUE_BOOL, RULE_NONE),
        KEY(WEBSOCKET_IDLE_TIMEOUT, "frontend", websocket_idle_timeout, VALUE_DURATION, RULE_POSITIVE),
        KEY(MIN_BODY_RATE, "frontend", min_body_rate, VALUE_SIZE, RULE_NONE),
        KEY(CLIENT_WORKER_SHARE, "frontend", client_worker_share, VALUE_DOUBLE, RULE_FRACTION),
        KEY(IO_URING, "frontend", io_uring, VALUE_BOOL, RULE_NONE),
};

static const char *const section_table[] = {"worker", "pool", "policy", "frontend"};

const char *config_key_name(ConfigKey k) {
        return k >= 0 && k < _CONFIG_KEY_MAX ? key_table[k].name : NULL;
}

const char *config_key_section(ConfigKey k) {
        return k >= 0 && k < _CONFIG_KEY_MAX ? key_table[k].section : NULL;
}

static void *key_field(const Config *c, ConfigKey k) {
        return (uint8_t *) c + key_table[k].offset;
}

/* The numeric keys as a double, for the range rules (exact for everything the rules compare with). */
static double key_number(const Config *c, ConfigKey k) {
        const void *p = key_field(c, k);

        switch (key_table[k].type) {
        case VALUE_SIZE:
        case VALUE_DURATION:
                return (double) *(const uint64_t *) p;
        case VALUE_UINT32:
        case VALUE_MAX_WORKERS:
                return (double) *(const uint32_t *) p;
        case VALUE_DOUBLE:
                return *(const double *) p;
        default:
                return 0;
        }
}

static const char *format_value(const Config *c, ConfigKey k, char *buf, size_t size) {
        const void *p = key_field(c, k);

        switch (key_table[k].type) {
        case VALUE_SIZE:
                snprintf(buf, size, "%llu", (unsigned long long) *(const uint64_t *) p);
                break;
        case VALUE_DURATION:
                return format_timespan(buf, size, *(const usec_t *) p);
        case VALUE_UINT32:
        case VALUE_MAX_WORKERS:
                snprintf(buf, size, "%u", *(const uint32_t *) p);
                break;
        case VALUE_DOUBLE:
                snprintf(buf, size, "%g", *(const double *) p);
                break;
        case VALUE_BOOL:
                snprintf(buf, size, "%s", *(const bool *) p ? "yes" : "no");
                break;
        default:
                snprintf(buf, size, "?");
        }
        return buf;
}

/* Levenshtein distance, case-insensitive; long strings count as far apart. */
static unsigned edit_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);
        unsigned row[64];

        if (la >= ELEMENTSOF(row) || lb >= ELEMENTSOF(row))
                return UINT32_MAX;
        for (size_t j = 0; j <= lb; j++)
                row[j] = (unsigned) j;
        for (size_t i = 1; i <= la; i++) {
                unsigned diag = row[0];
                row[0] = (unsigned) i;
                for (size_t j = 1; j <= lb; j++) {
                        unsigned up = row[j];
                        bool same = tolower((unsigned char) a[i - 1]) == tolower((unsigned char) b[j - 1]);
                        row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1), diag + (same ? 0 : 1));
                        diag = up;
                }
        }
        return row[lb];
}

static bool section_known(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(section_table); i++)
                if (streq(s, section_table[i]))
                        return true;
        return false;
}

static ConfigKey key_lookup(const char *section, const char *name) {
        for (ConfigKey k = 0; k < _CONFIG_KEY_MAX; k++)
                if (streq(key_table[k].name, name) && (!section || streq(key_table[k].section, section)))
                        return k;
        return _CONFIG_KEY_INVALID;
}

/* The closest key within edit distance 2, preferring keys of the given section. */
static ConfigKey key_closest(const char *section, const char *name) {
        ConfigKey best = _CONFIG_KEY_INVALID;
        unsigned best_d = 3;

        for (ConfigKey k = 0; k < _CONFIG_KEY_MAX; k++) {
                unsigned d = edit_distance(name, key_table[k].name);
                /* within the section wins ties: compare (d, other-section) lexicographically */
                unsigned score = d * 2 + (streq(key_table[k].section, section) ? 0 : 1);
                if (d <= 2 && (best < 0 || score < best_d)) {
                        best = k;
                        best_d = score;
                }
        }
        return best;
}

static const char *section_closest(const char *name) {
        const char *best = NULL;
        unsigned best_d = 3;

        for (size_t i = 0; i < ELEMENTSOF(section_table); i++) {
                unsigned d = edit_distance(name, section_table[i]);
                if (d < best_d) {
                        best = section_table[i];
                        best_d = d;
                }
        }
        return best;
}

/* ---- error messages ---- */

/* Stores "PATH:LINE: [section] key: what" in *ret_error (each part left out when unknown) and returns
 * error, or -ENOMEM with *ret_error = NULL. */
static int error_setv(char **ret_error, int error, const char *path, unsigned line, const char *section,
                      const char *key, const char *format, va_list ap) {
        _cleanup_free_ char *what = NULL, *where = NULL;
        int r;

        if (!ret_error)
                return error;
        *ret_error = NULL;
        if (vasprintf(&what, format, ap) < 0)
                return -ENOMEM;

        if (path && line > 0)
                r = asprintf(&where, "%s:%u: ", path, line);
        else if (path)
                r = asprintf(&where, "%s: ", path);
        else if (line > 0)
                r = asprintf(&where, "line %u: ", line);
        else
                r = asprintf(&where, "%s", "");
        if (r < 0)
                return -ENOMEM;

        if (!isempty(section) && key)
                r = asprintf(ret_error, "%s[%s] %s: %s", where, section, key, what);
        else if (!isempty(section))
                r = asprintf(ret_error, "%s[%s]: %s", where, section, what);
        else if (key)
                r = asprintf(ret_error, "%s%s: %s", where, key, what);
        else
                r = asprintf(ret_error, "%s%s", where, what);
        if (r < 0) {
                *ret_error = NULL;
                return -ENOMEM;
        }
        return error;
}

_printf_(7, 8) static int error_set(char **ret_error, int error, const char *path, unsigned line,
                                    const char *section, const char *key, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = error_setv(ret_error, error, path, line, section, key, format, ap);
        va_end(ap);
        return r;
}

/* An error about key k of c, at the line where c set it. */
_printf_(4, 5) static int key_error(const Config *c, ConfigKey k, char **ret_error, const char *format,
                                    ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = error_setv(ret_error, -EINVAL, c->path, c->line[k], key_table[k].section, key_table[k].name,
                       format, ap);
        va_end(ap);
        return r;
}

/* Copies s into buf for quoting in a message, cut short (with "...") past what a message should hold. */
static const char *shorten(const char *s, char *buf, size_t size) {
        size_t l = strlen(s);

        if (l < size)
                return s;
        snprintf(buf, size, "%.*s...", (int) (size - 4), s);
        return buf;
}

/* ---- addresses ---- */

static int parse_address(const char *s, bool unix_ok, struct sockaddr_storage *ret, socklen_t *ret_len,
                         const char **ret_reason) {
        struct sockaddr_storage sa = {};
        char host[INET6_ADDRSTRLEN];
        const char *h, *colon;
        size_t hl;
        uint32_t port;
        int family;

        if (s[0] == '/') {
                struct sockaddr_un *un = (struct sockaddr_un *) &sa;
                size_t l = strlen(s);

                if (!unix_ok)
                        return refuse(ret_reason, "Unix socket paths are not accepted here");
                if (l >= sizeof(un->sun_path))
                        return refuse(ret_reason, "Unix socket path is longer than 107 bytes");
                un->sun_family = AF_UNIX;
                memcpy(un->sun_path, s, l + 1);
                *ret = sa;
                *ret_len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + l + 1);
                return 0;
        }

        if (s[0] == '[') {
                const char *end = strchr(s, ']');
                if (!end)
                        return refuse(ret_reason, "missing ']' after the IPv6 address");
                family = AF_INET6, h = s + 1, hl = (size_t) (end - h), colon = end + 1;
                if (*colon != ':')
                        return refuse(ret_reason, "missing ':PORT'");
        } else {
                colon = strrchr(s, ':');
                if (!colon)
                        return refuse(ret_reason, "missing ':PORT'");
                family = AF_INET, h = s, hl = (size_t) (colon - s);
                if (memchr(h, ':', hl))
                        return refuse(ret_reason, "an IPv6 address goes in brackets, as in [::1]:8080");
        }
        if (hl >= sizeof(host))
                return refuse(ret_reason, "not a numeric IP address (host names are not resolved)");
        memcpy(host, h, hl);
        host[hl] = 0;
        if (parse_uint32(colon + 1, &port) < 0 || port == 0 || port > 65535)
                return refuse(ret_reason, "the port must be a number from 1 to 65535");

        if (family == AF_INET) {
                struct sockaddr_in *in = (struct sockaddr_in *) &sa;
                if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
                        return refuse(ret_reason,
                                      "not a numeric IPv4 address (host names are not resolved)");
                in->sin_family = AF_INET;
                in->sin_port = htons((uint16_t) port);
                *ret_len = sizeof(*in);
        } else {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &sa;
                if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
                        return refuse(ret_reason, "not a numeric IPv6 address");
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons((uint16_t) port);
                *ret_len = sizeof(*in6);
        }
        *ret = sa;
        return 0;
}

int config_parse_socket_address(const char *s, bool unix_ok, struct sockaddr_storage *ret,
                                socklen_t *ret_len) {
        const char *reason;

        return parse_address(s, unix_ok, ret, ret_len, &reason);
}

int config_parse_ip_prefix(const char *s, ConfigPrefix *ret) {
        ConfigPrefix p = {};
        char host[INET6_ADDRSTRLEN];
        const char *slash = strchr(s, '/');
        size_t hl = slash ? (size_t) (slash - s) : strlen(s);
        unsigned max;

        if (hl == 0 || hl >= sizeof(host))
                return -EINVAL;
        memcpy(host, s, hl);
        host[hl] = 0;
        if (inet_pton(AF_INET, host, &p.address.in) == 1)
                p.family = AF_INET, max = 32;
        else if (inet_pton(AF_INET6, host, &p.address.in6) == 1)
                p.family = AF_INET6, max = 128;
        else
                return -EINVAL;
        p.prefixlen = max;
        if (slash) {
                uint32_t l;
                if (!isdigit((unsigned char) slash[1]) || parse_uint32(slash + 1, &l) < 0 || l > max)
                        return -EINVAL;
                p.prefixlen = l;
        }
        *ret = p;
        return 0;
}

static uint16_t sockaddr_port(const struct sockaddr_storage *sa) {
        if (sa->ss_family == AF_INET)
                return ntohs(((const struct sockaddr_in *) sa)->sin_port);
        if (sa->ss_family == AF_INET6)
                return ntohs(((const struct sockaddr_in6 *) sa)->sin6_port);
        return 0;
}

static bool sockaddr_is_any(const struct sockaddr_storage *sa) {
        if (sa->ss_family == AF_INET)
                return ((const struct sockaddr_in *) sa)->sin_addr.s_addr == htonl(INADDR_ANY);
        if (sa->ss_family == AF_INET6)
                return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *) sa)->sin6_addr);
        return false;
}

static bool sockaddr_is_local(const struct sockaddr_storage *sa) {
        if (sa->ss_family == AF_UNIX)
                return true;
        if (sa->ss_family == AF_INET)
                return (ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr) >> 24) == 127;
        if (sa->ss_family == AF_INET6)
                return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *) sa)->sin6_addr);
        return false;
}

bool config_address_is_local(const struct sockaddr_storage *sa) {
        return sockaddr_is_local(sa);
}

static bool sockaddr_equal(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
        if (a->ss_family != b->ss_family)
                return false;
        switch (a->ss_family) {
        case AF_UNIX:
                return streq(((const struct sockaddr_un *) a)->sun_path,
                             ((const struct sockaddr_un *) b)->sun_path);
        case AF_INET:
                return sockaddr_port(a) == sockaddr_port(b) &&
                       ((const struct sockaddr_in *) a)->sin_addr.s_addr ==
                               ((const struct sockaddr_in *) b)->sin_addr.s_addr;
        case AF_INET6:
                return sockaddr_port(a) == sockaddr_port(b) &&
                       IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *) a)->sin6_addr,
                                          &((const struct sockaddr_in6 *) b)->sin6_addr);
        default:
                return false;
        }
}

/* Whether a listener on a would take connections meant for b: the same address, or the same port under a
 * wildcard ([::] is dual-stack, so it covers IPv4 too). */
static bool sockaddr_overlap(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
        if (a->ss_family == AF_UNIX || b->ss_family == AF_UNIX || sockaddr_port(a) != sockaddr_port(b))
                return sockaddr_equal(a, b);
        if ((a->ss_family == AF_INET6 && sockaddr_is_any(a)) ||
            (b->ss_family == AF_INET6 && sockaddr_is_any(b)))
                return true;
        if (a->ss_family != b->ss_family)
                return false;
        return sockaddr_is_any(a) || sockaddr_is_any(b) || sockaddr_equal(a, b);
}

/* ---- exec ---- */

int config_exec_split(const char *line, char ***ret_argv, const char **ret_reason) {
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *word = NULL;
        size_t len = 0;
        bool in_word = false;
        int r;

        word = malloc(strlen(line) + 1); /* no word is longer than the line */
        if (!word)
                return -ENOMEM;

        for (const char *s = line;; s++) {
                if (*s == 0 || isspace((unsigned char) *s)) {
                        if (in_word) {
                                word[len] = 0; /* strndup() may look past len for the NUL */
                                r = strv_consume(&argv, strdup(word));
                                if (r < 0)
                                        return r;
                                in_word = false, len = 0;
                        }
                        if (*s == 0)
                                break;
                        continue;
                }
                in_word = true;
                if (*s == '\'') {
                        const char *end = strchr(s + 1, '\'');
                        if (!end)
                                return refuse(ret_reason, "unterminated single quote");
                        memcpy(word + len, s + 1, (size_t) (end - s - 1));
                        len += (size_t) (end - s - 1);
                        s = end;
                } else if (*s == '"') {
                        for (s++; *s != '"'; s++) {
                                if (*s == 0)
                                        return refuse(ret_reason, "unterminated double quote");
                                /* POSIX: inside "..." a backslash only escapes these */
                                if (*s == '\\' && s[1] != 0 && strchr("\\\"$`", s[1]))
                                        s++;
                                word[len++] = *s;
                        }
                } else if (*s == '\\') {
                        if (s[1] == 0)
                                return refuse(ret_reason, "trailing backslash");
                        word[len++] = *++s;
                } else
                        word[len++] = *s;
        }

        if (strv_length(argv) == 0)
                return refuse(ret_reason, "empty command");
        *ret_argv = TAKE_PTR(argv);
        return 0;
}

static bool word_needs_quotes(const char *w) {
        if (*w == 0)
                return true;
        for (; *w; w++)
                if (!isalnum((unsigned char) *w) && !strchr("_-./:=,@%+", *w))
                        return true;
        return false;
}

char *config_exec_to_string(char *const *argv) {
        size_t size = 1;
        char *buf, *p;

        for (char *const *a = argv; a && *a; a++)
                size += strlen(*a) * 4 + 3; /* worst case: every character a ' → '\'' */
        p = buf = malloc(size);
        if (!buf)
                return NULL;
        for (char *const *a = argv; a && *a; a++) {
                if (a != argv)
                        *p++ = ' ';
                if (!word_needs_quotes(*a)) {
                        p = stpcpy(p, *a);
                        continue;
                }
                *p++ = '\'';
                for (const char *s = *a; *s; s++)
                        if (*s == '\'')
                                p = stpcpy(p, "'\\''");
                        else
                                *p++ = *s;
                *p++ = '\'';
        }
        *p = 0;
        return buf;
}

/* ---- defaults ---- */

int config_init_defaults(Config *c) {
        *c = (Config){
                .memory_limit = 0,
                .cpu_wall_cores = 1.0,
                .concurrency = 0,
                .backend = BACKEND_AUTO,
                .min_workers = 1,
                .max_workers = 0,
                .min_free_memory = 0,
                .spawn_timeout = 10 * USEC_PER_SEC,
                .drain_timeout = 30 * USEC_PER_SEC,
                .stop_timeout = 10 * USEC_PER_SEC,
                .readopt = true,
                .adopt_timeout = 15 * USEC_PER_SEC,
                .hung_timeout = 60 * USEC_PER_SEC,
                .unanswered_limit = 3,
                .reload_state = RELOAD_STATE_REPOINT,
                .reload_timeout = 10 * 60 * USEC_PER_SEC,
                .reception_threshold = 0.5,
                .admission_threshold = 0.8,
                .compaction_margin = 1.5,
                .occupancy_interval = 5 * USEC_PER_SEC,
                .window_rows = 60,
                .smoothing_rows = 6,
                .stale_after = 3,
                .relief_moves = true,
                .rps_target = 0,
                .rps_up_window = 30 * USEC_PER_SEC,
                .rps_down_window = 120 * USEC_PER_SEC,
                .burst_window = 1500 * USEC_PER_MSEC,
                .burst_queue = 8,
                .header_timeout = 10 * USEC_PER_SEC,
                .idle_timeout = 60 * USEC_PER_SEC,
                .response_timeout = 60 * USEC_PER_SEC,
                .hold_timeout = 10 * USEC_PER_SEC,
                .shutdown_timeout = 30 * USEC_PER_SEC,
                .max_header_size = 64 * 1024,
                .max_header_fields = 100,
                .max_body_size = 0,
                .max_connections = 10000,
                .h2_max_concurrent_streams = 100,
                .upstream_connections = 64,
                .cookie_max_age = 7 * 24 * 3600 * USEC_PER_SEC,
                .max_revoked_users = 100000,
                .admin_population_timeout = USEC_PER_SEC,
                .websocket = true,
                .websocket_idle_timeout = 600 * USEC_PER_SEC,
                .min_body_rate = 512,
                .client_worker_share = 0.5,
                .io_uring = false,
        };

        if (strv_consume(&c->exec, strdup(EP_DEMO_WORKER_PATH)) < 0)
                goto oom;
        c->exec_line = config_exec_to_string(c->exec);
        c->listen[0] = strdup(DEFAULT_LISTEN);
        if (!c->exec_line || !c->listen[0])
                goto oom;
        return 0;
oom:
        config_done(c);
        return -ENOMEM;
}

static void listen_clear(Config *c) {
        for (size_t i = 0; c->listen[i]; i++)
                c->listen[i] = mfree(c->listen[i]);
}

void config_done(Config *c) {
        free(c->path);
        strv_free(c->exec);
        free(c->exec_line);
        config_env_free(c->environment);
        free(c->environment_file);
        config_env_free(c->environment_file_vars);
        free(c->working_directory);
        free(c->user);
        free(c->group);
        config_identity_done(&c->identity);
        listen_clear(c);
        free(c->admin_listen);
        free(c->decision_log);
        strv_free(c->trusted_proxies);
        *c = (Config){};
}

/* ---- validation ---- */

/* The rule of a numeric key, as the end of a sentence starting with the value; NULL when it holds. */
static const char *rule_violation(const Config *c, ConfigKey k) {
        double v = key_number(c, k);

        switch (key_table[k].rule) {
        case RULE_NONE:
                return NULL;
        case RULE_POSITIVE:
                return v > 0 ? NULL : "is not positive (must be greater than 0)";
        case RULE_FRACTION:
                return v > 0 && v <= 1 ? NULL : "is outside (0, 1]";
        case RULE_AT_LEAST_ONE:
                return v >= 1 ? NULL
                              : "is less than 1 (after a compaction the survivors would be over capacity)";
        case RULE_NOT_NEGATIVE:
                return v >= 0 ? NULL : "is negative";
        case RULE_ROWS:
                if (v < 1)
                        return "is not positive (must be greater than 0)";
                return v <= CONFIG_WINDOW_ROWS_MAX ? NULL : "is greater than 65536";
        }
        return NULL;
}

static int validate_exec(const Config *c, char **ret_error) {
        char buf[72];

        if (strv_length(c->exec) == 0)
                return key_error(c, CONFIG_KEY_EXEC, ret_error, "empty command");
        if (c->exec[0][0] != '/')
                return key_error(c, CONFIG_KEY_EXEC, ret_error, "'%s' is not an absolute path",
                                 shorten(c->exec[0], buf, sizeof(buf)));
        return 0;
}

static int validate_listen(const Config *c, char **ret_error) {
        struct sockaddr_storage sa[CONFIG_LISTEN_MAX];
        socklen_t len;
        const char *reason;
        char buf[72];

        for (size_t i = 0; i < CONFIG_LISTEN_MAX && c->listen[i]; i++) {
                if (parse_address(c->listen[i], false, &sa[i], &len, &reason) < 0)
                        return key_error(c, CONFIG_KEY_LISTEN, ret_error,
                                         "'%s': %s (expected " ADDRESS_FORMS ")",
                                         shorten(c->listen[i], buf, sizeof(buf)), reason);
                for (size_t j = 0; j < i; j++)
                        if (sockaddr_equal(&sa[i], &sa[j]))
                                return key_error(c, CONFIG_KEY_LISTEN, ret_error, "'%s' is listed twice",
                                                 c->listen[i]);
        }
        return 0;
}

static int validate_admin_listen(const Config *c, char **ret_error) {
        struct sockaddr_storage sa;
        socklen_t len;
        const char *reason;
        char buf[72];

        if (!c->admin_listen)
                return 0;
        if (parse_address(c->admin_listen, true, &sa, &len, &reason) < 0)
                return key_error(c, CONFIG_KEY_ADMIN_LISTEN, ret_error,
                                 "'%s': %s (expected a loopback " ADDRESS_FORMS " or an absolute path)",
                                 shorten(c->admin_listen, buf, sizeof(buf)), reason);
        return 0;
}

/* A cross-key rule: admin_allow_public may come after admin_listen in the file. */
static int validate_admin_public(const Config *c, char **ret_error) {
        struct sockaddr_storage sa;
        socklen_t len;
        const char *reason;

        if (!c->admin_listen || c->admin_allow_public ||
            parse_address(c->admin_listen, true, &sa, &len, &reason) < 0 || sockaddr_is_local(&sa))
                return 0;
        return key_error(c, CONFIG_KEY_ADMIN_LISTEN, ret_error,
                         "'%s' is not a loopback address or a Unix socket path (the admin listener shows every "
                         "user and the pool's state, and must not be public: set admin_allow_public = yes to "
                         "listen there all the same)",
                         c->admin_listen);
}

/* environment=, environment_file= and working_directory= as written; what they name is read by
 * load_worker_runtime(). */
static int validate_worker_runtime(const Config *c, ConfigKey k, char **ret_error) {
        _cleanup_free_ char *why = NULL;
        const char *path;
        char buf[72];
        int r;

        if (key_table[k].type == VALUE_ENVIRONMENT) {
                for (char **e = c->environment; e && *e; e++) {
                        r = config_env_check(*e, &why);
                        if (r == -EINVAL)
                                return key_error(c, k, ret_error, "%s", why);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        path = key_table[k].type == VALUE_ENVIRONMENT_FILE ? c->environment_file
               : key_table[k].type == VALUE_DIRECTORY      ? c->working_directory
                                                           : NULL;
        /* relative to what? the commander's working directory is / under systemd, not the file's */
        if (path && path[0] != '/')
                return key_error(c, k, ret_error, "'%s' is not an absolute path",
                                 shorten(path, buf, sizeof(buf)));
        return 0;
}

static int validate_key(const Config *c, ConfigKey k, const char *shown, char **ret_error) {
        const char *why;
        char buf[72];

        switch (key_table[k].type) {
        case VALUE_EXEC:
                return validate_exec(c, ret_error);
        case VALUE_ENVIRONMENT:
        case VALUE_ENVIRONMENT_FILE:
        case VALUE_DIRECTORY:
                return validate_worker_runtime(c, k, ret_error);
        case VALUE_IDENTITY:
                return 0; /* resolved by load_worker_runtime() */
        case VALUE_BACKEND:
                if (!backend_kind_to_string(c->backend))
                        return key_error(c, k, ret_error, "%d is not a backend", (int) c->backend);
                return 0;
        case VALUE_RELOAD_STATE:
                if (!reload_state_to_string(c->reload_state))
                        return key_error(c, k, ret_error, "%d is not a reload state", (int) c->reload_state);
                return 0;
        case VALUE_LISTEN:
                return validate_listen(c, ret_error);
        case VALUE_ADMIN_LISTEN:
                return validate_admin_listen(c, ret_error);
        case VALUE_PREFIXES:
                for (char **p = c->trusted_proxies; p && *p; p++) {
                        ConfigPrefix prefix;
                        if (!streq(*p, CONFIG_TRUSTED_UNIX) && config_parse_ip_prefix(*p, &prefix) < 0)
                                return key_error(c, k, ret_error,
                                                 "'%s' is not an IP address, ADDRESS/PREFIXLEN or '"
                                                 CONFIG_TRUSTED_UNIX "'",
                                                 shorten(*p, buf, sizeof(buf)));
                }
                return 0;
        default:
                why = rule_violation(c, k);
                if (why)
                        return key_error(c, k, ret_error, "%s %s",
                                         shown ? shorten(shown, buf, sizeof(buf))
                                               : format_value(c, k, buf, sizeof(buf)),
                                         why);
                return 0;
        }
}

/* "a = va must not exceed b = vb", reported at whichever of the two lines the file set (a's first), and
 * naming the other one's line. */
static int cross_error(const Config *c, char **ret_error, ConfigKey a, ConfigKey b, const char *a_verb,
                       const char *b_verb) {
        bool anchor_a = c->line[a] > 0 || c->line[b] == 0;
        ConfigKey anchor = anchor_a ? a : b, other = anchor_a ? b : a;
        char va[32], vo[32], where[32] = "";

        if (c->line[other] > 0)
                snprintf(where, sizeof(where), " (line %u)", c->line[other]);
        else if (c->path)
                snprintf(where, sizeof(where), " (the default)");
        return key_error(c, anchor, ret_error, "%s %s %s = %s%s", format_value(c, anchor, va, sizeof(va)),
                         anchor_a ? a_verb : b_verb, key_table[other].name,
                         format_value(c, other, vo, sizeof(vo)), where);
}

static int validate_admin_apart(const Config *c, char **ret_error) {
        struct sockaddr_storage admin, sa;
        socklen_t len;
        const char *reason;

        if (!c->admin_listen || parse_address(c->admin_listen, true, &admin, &len, &reason) < 0)
                return 0;
        for (size_t i = 0; i < CONFIG_LISTEN_MAX && c->listen[i]; i++) {
                if (parse_address(c->listen[i], false, &sa, &len, &reason) < 0 ||
                    !sockaddr_overlap(&admin, &sa))
                        continue;
                bool anchor_admin = c->line[CONFIG_KEY_ADMIN_LISTEN] > 0 || c->line[CONFIG_KEY_LISTEN] == 0;
                unsigned other = c->line[anchor_admin ? CONFIG_KEY_LISTEN : CONFIG_KEY_ADMIN_LISTEN];
                char where[32] = "";
                if (other > 0)
                        snprintf(where, sizeof(where), " (line %u)", other);
                else if (c->path && anchor_admin)
                        snprintf(where, sizeof(where), " (the default)");
                if (anchor_admin)
                        return key_error(
                                c, CONFIG_KEY_ADMIN_LISTEN, ret_error,
                                "'%s' overlaps listen address '%s'%s; the admin listener must never "
                                "be reachable through the public one",
                                c->admin_listen, c->listen[i], where);
                return key_error(
                        c, CONFIG_KEY_LISTEN, ret_error,
                        "'%s' overlaps admin_listen '%s'%s; the admin listener must never be reachable "
                        "through the public one",
                        c->listen[i], c->admin_listen, where);
        }
        return 0;
}

int config_validate(const Config *c, char **ret_error) {
        int r;

        if (ret_error)
                *ret_error = NULL;
        for (ConfigKey k = 0; k < _CONFIG_KEY_MAX; k++) {
                r = validate_key(c, k, NULL, ret_error);
                if (r < 0)
                        return r;
        }
        if (c->max_workers > 0 && c->min_workers > c->max_workers)
                return cross_error(c, ret_error, CONFIG_KEY_MIN_WORKERS, CONFIG_KEY_MAX_WORKERS,
                                   "is greater than", "is less than");
        if (c->smoothing_rows > c->window_rows)
                return cross_error(c, ret_error, CONFIG_KEY_SMOOTHING_ROWS, CONFIG_KEY_WINDOW_ROWS,
                                   "is greater than", "is less than");
        r = validate_admin_public(c, ret_error);
        if (r < 0)
                return r;
        return validate_admin_apart(c, ret_error);
}

/* ---- parsing ---- */

typedef struct Parser {
        Config *config; /* the configuration being built */
        FILE *file;
        char *buf; /* the current line, whole (getline) */
        size_t buf_size;
        unsigned line;
        char section[16];     /* the current known section; "" before the first header */
        bool listen_assigned; /* the file's first listen= replaces the default */
        int error;            /* the first error; stops the parse */
        char **ret_error;
} Parser;

_printf_(4, 5) static int parser_fail(Parser *p, const char *section, const char *key, const char *format,
                                      ...) {
        va_list ap;

        va_start(ap, format);
        p->error = error_setv(p->ret_error, -EINVAL, p->config->path, p->line, section, key, format, ap);
        va_end(ap);
        return p->error;
}

static const char *skip_bom_and_blanks(const Parser *p, const char *s) {
        if (p->line == 1 && startswith(s, "\xEF\xBB\xBF"))
                s += 3;
        while (isspace((unsigned char) *s))
                s++;
        return s;
}

/* The current line without BOM, leading blanks and line ending, cut short for a message. */
static const char *parser_text(const Parser *p, char *buf, size_t size) {
        const char *s = skip_bom_and_blanks(p, p->buf);
        size_t l = strcspn(s, "\r\n");

        if (l >= size)
                snprintf(buf, size, "%.*s...", (int) (size - 4), s);
        else
                snprintf(buf, size, "%.*s", (int) l, s);
        return buf;
}

/* Checks a "[section]" line here rather than leaving it to inih, which would only notice an unknown
 * section at its first key, and would ignore text after the ']'. */
static int parser_check_section(Parser *p) {
        char buf[72];
        const char *s = skip_bom_and_blanks(p, p->buf), *end;

        if (*s != '[')
                return 0;
        end = strchr(s, ']');
        if (!end)
                return parser_fail(p, NULL, NULL, "'%s': section header lacks ']'",
                                   parser_text(p, buf, sizeof(buf)));
        for (const char *t = end + 1; *t; t++)
                if (!isspace((unsigned char) *t))
                        return parser_fail(
                                p, NULL, NULL,
                                "'%s': unexpected text after the section header (comments must be "
                                "on a line of their own)",
                                parser_text(p, buf, sizeof(buf)));

        _cleanup_free_ char *name = strndup(s + 1, (size_t) (end - s - 1));
        if (!name)
                return p->error = -ENOMEM;
        if (isempty(name))
                return parser_fail(p, NULL, NULL, "'[]': empty section name");
        if (section_known(name)) {
                snprintf(p->section, sizeof(p->section), "%s", name);
                return 0;
        }
        const char *close = section_closest(name);
        if (close)
                return parser_fail(p, shorten(name, buf, sizeof(buf)), NULL,
                                   "unknown section; did you mean [%s]?", close);
        return parser_fail(p, shorten(name, buf, sizeof(buf)), NULL,
                           "unknown section (the sections are [worker], [pool], [policy] and [frontend])");
}

/* inih's fgets-style reader. Reads whole lines, so that nothing is silently split at the buffer size or
 * cut at a NUL, and counts them: the handler's line is always the last one read here. */
static char *parser_read(char *str, int num, void *userdata) {
        Parser *p = userdata;
        ssize_t n;
        size_t content;

        if (p->error < 0)
                return NULL;
        errno = 0;
        n = getline(&p->buf, &p->buf_size, p->file);
        if (n < 0) {
                if (ferror(p->file)) {
                        int e = errno > 0 ? errno : EIO;
                        p->error = error_set(p->ret_error, -e, p->config->path, 0, NULL, NULL,
                                             "cannot read: %s", strerror(e));
                }
                return NULL;
        }
        p->line++;
        content = (size_t) n;
        while (content > 0 && (p->buf[content - 1] == '\n' || p->buf[content - 1] == '\r'))
                content--;
        if (memchr(p->buf, 0, (size_t) n)) {
                parser_fail(p, NULL, NULL, "line contains a NUL byte");
                return NULL;
        }
        if (content > CONFIG_LINE_MAX || (size_t) n >= (size_t) num) {
                parser_fail(p, NULL, NULL, "line is longer than %u bytes", CONFIG_LINE_MAX);
                return NULL;
        }
        if (parser_check_section(p) < 0)
                return NULL;
        memcpy(str, p->buf, (size_t) n + 1);
        return str;
}

static int parse_number(Parser *p, ConfigKey k, const char *value) {
        const KeyInfo *ki = &key_table[k];
        void *field = key_field(p->config, k);
        const char *what;
        char buf[72];
        int r;

        switch (ki->type) {
        case VALUE_SIZE:
                r = parse_size(value, field);
                what = "is not a size (bytes, or a number followed by K, M, G or T)";
                break;
        case VALUE_DURATION:
                r = parse_duration(value, field);
                what = "is not a duration (a number followed by us, ms, s, min, h or d; a bare number is "
                       "seconds)";
                break;
        case VALUE_UINT32:
        case VALUE_MAX_WORKERS:
                r = parse_uint32(value, field);
                what = ki->type == VALUE_MAX_WORKERS ? "is not a non-negative integer or 'unbounded'"
                       : ki->rule == RULE_NONE       ? "is not a non-negative integer"
                                                     : "is not a positive integer";
                break;
        case VALUE_DOUBLE:
                r = parse_double(value, field);
                what = "is not a number";
                break;
        default:
                abort(); /* only numeric keys come here */
        }
        if (r == -ERANGE)
                what = "is out of range";
        else if (r < 0 && value[0] == '-')
                what = "is negative";
        if (r < 0)
                return parser_fail(p, ki->section, ki->name, "'%s' %s%s", shorten(value, buf, sizeof(buf)),
                                   what,
                                   strpbrk(value, "#;") ? " (comments must be on a line of their own)" : "");
        return 0;
}

static int parse_list(Parser *p, ConfigKey k, const char *value) {
        static const char blanks[] = " \t\r\n\v\f";
        Config *c = p->config;
        _cleanup_free_ char *copy = strdup(value);
        char *state = NULL;
        int r;

        if (!copy)
                return p->error = -ENOMEM;
        /* like systemd's list settings: each assignment appends, an empty one resets; and the file's first
         * listen= replaces the built-in address rather than adding to it */
        if (k == CONFIG_KEY_LISTEN && (!p->listen_assigned || isempty(value)))
                listen_clear(c);
        if (k == CONFIG_KEY_TRUSTED_PROXIES && isempty(value))
                c->trusted_proxies = strv_free(c->trusted_proxies);
        if (k == CONFIG_KEY_LISTEN)
                p->listen_assigned = true;

        for (char *w = strtok_r(copy, blanks, &state); w; w = strtok_r(NULL, blanks, &state)) {
                if (k == CONFIG_KEY_TRUSTED_PROXIES) {
                        r = strv_consume(&c->trusted_proxies, strdup(w));
                        if (r < 0)
                                return p->error = r;
                        continue;
                }
                size_t n = 0;
                while (c->listen[n])
                        n++;
                if (n >= CONFIG_LISTEN_MAX)
                        return parser_fail(p, key_table[k].section, key_table[k].name,
                                           "more than %u addresses", (unsigned) CONFIG_LISTEN_MAX);
                c->listen[n] = strdup(w);
                if (!c->listen[n])
                        return p->error = -ENOMEM;
        }
        return 0;
}

/* [worker] environment=, environment_file=, working_directory=, user=, group=. An empty value resets the
 * key to its default (none), as in systemd. */
static int parse_worker_runtime(Parser *p, ConfigKey k, const char *value) {
        const KeyInfo *ki = &key_table[k];
        Config *c = p->config;
        _cleanup_free_ char *why = NULL;
        char **field = key_field(c, k);
        int r;

        if (ki->type == VALUE_ENVIRONMENT) {
                r = config_env_assign(&c->environment, value, &why);
                if (r == -EINVAL)
                        return parser_fail(p, ki->section, ki->name, "%s", why);
                return r < 0 ? (p->error = r) : 0;
        }
        if (ki->type == VALUE_ENVIRONMENT_FILE) {
                /* systemd's EnvironmentFile=-PATH: a file that may be missing */
                c->environment_file_optional = value[0] == '-';
                if (streq(value, "-"))
                        return parser_fail(p, ki->section, ki->name, "'-' names no file");
                value += c->environment_file_optional;
        }
        *field = mfree(*field);
        if (isempty(value))
                return 0;
        *field = strdup(value);
        return *field ? 0 : (p->error = -ENOMEM);
}

static int parse_value(Parser *p, ConfigKey k, const char *value) {
        const KeyInfo *ki = &key_table[k];
        Config *c = p->config;
        const char *reason;
        char **argv = NULL;
        char buf[72];
        int r;

        switch (ki->type) {
        case VALUE_EXEC:
                if (isempty(value))
                        return parser_fail(p, ki->section, ki->name, "no command given");
                r = config_exec_split(value, &argv, &reason);
                if (r == -ENOMEM)
                        return p->error = r;
                if (r < 0)
                        return parser_fail(p, ki->section, ki->name, "%s", reason);
                strv_free(c->exec);
                c->exec = argv;
                free(c->exec_line);
                c->exec_line = strdup(value);
                return c->exec_line ? 0 : (p->error = -ENOMEM);
        case VALUE_MAX_WORKERS:
                if (isempty(value) || streq(value, "unbounded")) {
                        c->max_workers = 0;
                        return 0;
                }
                return parse_number(p, k, value);
        case VALUE_LISTEN:
        case VALUE_PREFIXES:
                return parse_list(p, k, value);
        case VALUE_ADMIN_LISTEN:
                c->admin_listen = mfree(c->admin_listen);
                if (isempty(value))
                        return 0;
                c->admin_listen = strdup(value);
                return c->admin_listen ? 0 : (p->error = -ENOMEM);
        case VALUE_PATH: {
                char **field = key_field(c, k);
                *field = mfree(*field);
                if (isempty(value))
                        return 0;
                if (value[0] != '/')
                        return parser_fail(p, ki->section, ki->name, "'%s' is not an absolute path",
                                           shorten(value, buf, sizeof(buf)));
                *field = strdup(value);
                return *field ? 0 : (p->error = -ENOMEM);
        }
        case VALUE_ENVIRONMENT:
        case VALUE_ENVIRONMENT_FILE:
        case VALUE_DIRECTORY:
        case VALUE_IDENTITY:
                return parse_worker_runtime(p, k, value);
        default:
                break;
        }

        if (isempty(value))
                return parser_fail(p, ki->section, ki->name,
                                   "no value given (remove the line to get the default)");
        if (ki->type == VALUE_BOOL) {
                if (parse_boolean(value, key_field(c, k)) < 0)
                        return parser_fail(p, ki->section, ki->name,
                                           "'%s' is not a boolean (yes/no, true/false, on/off, 1/0)",
                                           shorten(value, buf, sizeof(buf)));
                return 0;
        }
        if (ki->type == VALUE_RELOAD_STATE) {
                c->reload_state = reload_state_from_string(value);
                if (c->reload_state < 0)
                        return parser_fail(p, ki->section, ki->name, "'%s' is not one of repoint, require-compatible",
                                           shorten(value, buf, sizeof(buf)));
                return 0;
        }
        if (ki->type == VALUE_BACKEND) {
                c->backend = backend_kind_from_string(value);
                if (c->backend < 0)
                        return parser_fail(p, ki->section, ki->name,
                                           "'%s' is not one of auto, scope, cgroup, none",
                                           shorten(value, buf, sizeof(buf)));
                return 0;
        }
        return parse_number(p, k, value);
}

/* Why a key is not known here, with the closest match when there is one. */
static int parser_unknown_key(Parser *p, const char *section, const char *name) {
        ConfigKey elsewhere = key_lookup(NULL, name), close = key_closest(section, name);
        char buf[72];
        const char *n = shorten(name, buf, sizeof(buf));

        if (isempty(section) && elsewhere >= 0)
                return parser_fail(p, NULL, n, "assignment before any section header (%s belongs in [%s])",
                                   n, key_table[elsewhere].section);
        if (isempty(section))
                return parser_fail(p, NULL, n, "assignment before any section header");
        if (elsewhere >= 0)
                return parser_fail(p, section, n, "unknown key in [%s]; it belongs in [%s]", section,
                                   key_table[elsewhere].section);
        if (close >= 0 && streq(key_table[close].section, section))
                return parser_fail(p, section, n, "unknown key; did you mean %s?", key_table[close].name);
        if (close >= 0)
                return parser_fail(p, section, n, "unknown key; did you mean [%s] %s?",
                                   key_table[close].section, key_table[close].name);
        return parser_fail(p, section, n, "unknown key");
}

static int parser_handle(void *userdata, const char *section, const char *name, const char *value,
                         int lineno_unused) {
        Parser *p = userdata;
        const char *s;
        char buf[72];
        ConfigKey k;
        int r;

        if (p->error < 0)
                return 0;

        /* inih also takes "key: value" and blanks inside a key; we keep to "key = value" */
        s = skip_bom_and_blanks(p, p->buf) + strlen(name);
        while (isspace((unsigned char) *s))
                s++;
        if (isempty(name) || *s != '=' || strpbrk(name, " \t\v\f")) {
                parser_fail(p, section, NULL, "expected 'key = value', got '%s'",
                            parser_text(p, buf, sizeof(buf)));
                return 0;
        }

        k = key_lookup(section, name);
        if (k < 0) {
                parser_unknown_key(p, section, name);
                return 0;
        }
        if (parse_value(p, k, value) < 0)
                return 0;
        /* the last assignment wins, and is the line that cross-key errors name */
        p->config->line[k] = p->line;
        r = validate_key(p->config, k, value, p->ret_error);
        if (r < 0) {
                p->error = r;
                return 0;
        }
        return 1;
}

/* inih's behaviour is set through process-wide variables in Debian's build; we set them for the
 * duration of one parse and put them back (the commander is single-threaded). */
typedef struct IniSettings {
        bool multiline, inline_comments, stop_on_first_error, use_stack, allow_realloc, no_value;
        int max_line, initial_alloc;
} IniSettings;

static IniSettings ini_settings_swap(IniSettings s) {
        IniSettings old = {
                ini_allow_multiline, ini_allow_inline_comments, ini_stop_on_first_error,
                ini_use_stack,       ini_allow_realloc,         ini_allow_no_value,
                ini_max_line,        ini_initial_alloc,
        };
        ini_allow_multiline = s.multiline;
        ini_allow_inline_comments = s.inline_comments;
        ini_stop_on_first_error = s.stop_on_first_error;
        ini_use_stack = s.use_stack;
        ini_allow_realloc = s.allow_realloc;
        ini_allow_no_value = s.no_value;
        ini_max_line = s.max_line;
        ini_initial_alloc = s.initial_alloc;
        return old;
}

static int parse_file(Parser *p) {
        IniSettings ours = {
                /* an indented line is an ordinary line, not a continuation of the previous value */
                .multiline = false,
                /* ';' and '#' may appear in values (exec = sh -c 'a; b'), so comments are whole lines */
                .inline_comments = false,
                .stop_on_first_error = true,
                /* one heap buffer of the longest line plus "\r\n\0", as inih wants */
                .use_stack = false,
                .allow_realloc = false,
                .no_value = false,
                .max_line = CONFIG_LINE_MAX + 3,
                .initial_alloc = CONFIG_LINE_MAX + 3,
        };
        IniSettings old = ini_settings_swap(ours);
        char buf[72];
        int r;

        r = ini_parse_stream(parser_read, p, parser_handle, p);
        (void) ini_settings_swap(old);

        if (p->error < 0)
                return p->error;
        if (r == -2)
                return -ENOMEM;
        if (r > 0) { /* a line inih could read neither as a section header nor as an assignment */
                const char *text = (unsigned) r == p->line ? parser_text(p, buf, sizeof(buf)) : "?";
                if (isempty(p->section))
                        return error_set(p->ret_error, -EINVAL, p->config->path, (unsigned) r, NULL, NULL,
                                         "expected '[section]' or 'key = value', got '%s'", text);
                return error_set(p->ret_error, -EINVAL, p->config->path, (unsigned) r, p->section, NULL,
                                 "expected 'key = value', got '%s'", text);
        }
        if (r < 0)
                return error_set(p->ret_error, -EIO, p->config->path, 0, NULL, NULL, "cannot parse");
        return 0;
}

/* What the [worker] runtime keys name, read on every load and reload: environment_file's variables, the
 * ids of user= and group=, working_directory's existence. An error names the key's line and comes back
 * as -EINVAL whatever the cause: -ENOENT is the configuration file's own (a group without one). */
static int load_worker_runtime(Config *c, char **ret_error) {
        _cleanup_free_ char *why = NULL;
        ConfigKey k;
        int r;

        if (c->environment_file) {
                r = config_env_file_read(c->environment_file, &c->environment_file_vars, &why);
                if (r == -ENOENT && c->environment_file_optional)
                        r = 0, why = mfree(why);
                if (r < 0 && why)
                        return key_error(c, CONFIG_KEY_ENVIRONMENT_FILE, ret_error, "%s", why);
                if (r < 0)
                        return r;
        }
        if (c->working_directory) {
                r = config_working_directory_check(c->working_directory, &why);
                if (r < 0 && why)
                        return key_error(c, CONFIG_KEY_WORKING_DIRECTORY, ret_error, "%s", why);
                if (r < 0)
                        return r;
        }
        r = config_identity_resolve(c->user, c->group, &c->identity, &k, &why);
        if (r < 0 && why)
                return key_error(c, k, ret_error, "%s", why);
        return r;
}

int config_load(Config *c, const char *path, char **ret_error) {
        _cleanup_(config_done) Config t = {};
        _cleanup_fclose_ FILE *f = NULL;
        int r;

        if (ret_error)
                *ret_error = NULL;
        r = config_init_defaults(&t);
        if (r < 0)
                return r;
        t.path = strdup(path);
        if (!t.path)
                return -ENOMEM;

        f = fopen(path, "re");
        if (!f) {
                int e = errno;
                return error_set(ret_error, -e, path, 0, NULL, NULL, "cannot open: %s", strerror(e));
        }

        Parser p = {.config = &t, .file = f, .ret_error = ret_error};
        r = parse_file(&p);
        free(p.buf);
        if (r < 0)
                return r;

        r = config_validate(&t, ret_error);
        if (r < 0)
                return r;
        r = load_worker_runtime(&t, ret_error);
        if (r < 0)
                return r;

        config_done(c);
        *c = t;
        t = (Config){};
        return 0;
}
