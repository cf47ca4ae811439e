/* SPDX-License-Identifier: MIT */
#pragma once

/* The group's configuration: /etc/elastic-pool/<group>.conf (INI). Every key has a default, documented
 * in docs/elastic-pool.conf.5.md; the words are DESIGN.md's. */

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "time-util.h"

typedef enum BackendKind {
        BACKEND_AUTO,
        BACKEND_SCOPE,
        BACKEND_CGROUP,
        BACKEND_NONE,
        _BACKEND_KIND_MAX,
        _BACKEND_KIND_INVALID = -EINVAL,
} BackendKind;

/* "auto", "scope", "cgroup", "none"; NULL for an out-of-range value. */
const char *backend_kind_to_string(BackendKind k);
/* The kind, or _BACKEND_KIND_INVALID for anything else (NULL included). */
BackendKind backend_kind_from_string(const char *s);

/* What a rolling reload does with a user whose worker and new worker name different package formats. */
typedef enum ReloadState {
        RELOAD_STATE_REPOINT,            /* re-point it: it starts over on the new version */
        RELOAD_STATE_REQUIRE_COMPATIBLE, /* keep it on the old worker until it leaves or reload_timeout */
        _RELOAD_STATE_MAX,
        _RELOAD_STATE_INVALID = -EINVAL,
} ReloadState;

/* "repoint", "require-compatible"; NULL for an out-of-range value. */
const char *reload_state_to_string(ReloadState s);
ReloadState reload_state_from_string(const char *s);

/* Every key of the file. Key names are unique across sections, so a key alone names it. */
typedef enum ConfigKey {
        CONFIG_KEY_EXEC,
        CONFIG_KEY_MEMORY_LIMIT,
        CONFIG_KEY_CPU_WALL_CORES,
        CONFIG_KEY_CONCURRENCY,
        CONFIG_KEY_ENVIRONMENT,
        CONFIG_KEY_ENVIRONMENT_FILE,
        CONFIG_KEY_WORKING_DIRECTORY,
        CONFIG_KEY_USER,
        CONFIG_KEY_GROUP,
        CONFIG_KEY_BACKEND,
        CONFIG_KEY_MIN_WORKERS,
        CONFIG_KEY_MAX_WORKERS,
        CONFIG_KEY_MIN_FREE_MEMORY,
        CONFIG_KEY_SPAWN_TIMEOUT,
        CONFIG_KEY_DRAIN_TIMEOUT,
        CONFIG_KEY_STOP_TIMEOUT,
        CONFIG_KEY_MOVE_TIMEOUT,
        CONFIG_KEY_READOPT,
        CONFIG_KEY_ADOPT_TIMEOUT,
        CONFIG_KEY_HUNG_TIMEOUT,
        CONFIG_KEY_UNANSWERED_LIMIT,
        CONFIG_KEY_RELOAD_STATE,
        CONFIG_KEY_RELOAD_TIMEOUT,
        CONFIG_KEY_RECEPTION_THRESHOLD,
        CONFIG_KEY_ADMISSION_THRESHOLD,
        CONFIG_KEY_COMPACTION_MARGIN,
        CONFIG_KEY_OCCUPANCY_INTERVAL,
        CONFIG_KEY_WINDOW_ROWS,
        CONFIG_KEY_SMOOTHING_ROWS,
        CONFIG_KEY_STALE_AFTER,
        CONFIG_KEY_RELIEF_MOVES,
        CONFIG_KEY_RPS_TARGET,
        CONFIG_KEY_RPS_UP_WINDOW,
        CONFIG_KEY_RPS_DOWN_WINDOW,
        CONFIG_KEY_DECISION_LOG,
        CONFIG_KEY_BURST_WINDOW,
        CONFIG_KEY_BURST_QUEUE,
        CONFIG_KEY_LISTEN,
        CONFIG_KEY_ADMIN_LISTEN,
        CONFIG_KEY_ADMIN_ALLOW_PUBLIC,
        CONFIG_KEY_ADMIN_POPULATION_TIMEOUT,
        CONFIG_KEY_HEADER_TIMEOUT,
        CONFIG_KEY_IDLE_TIMEOUT,
        CONFIG_KEY_RESPONSE_TIMEOUT,
        CONFIG_KEY_HOLD_TIMEOUT,
        CONFIG_KEY_SHUTDOWN_TIMEOUT,
        CONFIG_KEY_MAX_HEADER_SIZE,
        CONFIG_KEY_MAX_HEADER_FIELDS,
        CONFIG_KEY_MAX_BODY_SIZE,
        CONFIG_KEY_MAX_CONNECTIONS,
        CONFIG_KEY_H2_MAX_CONCURRENT_STREAMS,
        CONFIG_KEY_UPSTREAM_CONNECTIONS,
        CONFIG_KEY_TRUSTED_PROXIES,
        CONFIG_KEY_COOKIE_MAX_AGE,
        CONFIG_KEY_MAX_REVOKED_USERS,
        CONFIG_KEY_USER_EXPIRY,
        CONFIG_KEY_WEBSOCKET,
        CONFIG_KEY_WEBSOCKET_IDLE_TIMEOUT,
        CONFIG_KEY_MIN_BODY_RATE,
        CONFIG_KEY_CLIENT_WORKER_SHARE,
        CONFIG_KEY_IO_URING,
        _CONFIG_KEY_MAX,
        _CONFIG_KEY_INVALID = -EINVAL,
} ConfigKey;

/* "min_workers" / "pool"; NULL for an out-of-range key. */
const char *config_key_name(ConfigKey k);
const char *config_key_section(ConfigKey k);

#define CONFIG_LISTEN_MAX 16
/* Longest accepted line, without its line ending. Longer lines are an error, never silently split. */
#define CONFIG_LINE_MAX 65536U
/* Upper bound of window_rows: one ring of this many reports is kept per worker. */
#define CONFIG_WINDOW_ROWS_MAX 65536U

/* Who a worker runs as: [worker] user= and group=, resolved when the file is loaded. */
typedef struct ConfigIdentity {
        bool set;         /* user= or group= given; otherwise the worker runs as the commander */
        uid_t uid;        /* the commander's own when only group= is given */
        gid_t gid;        /* group=, else the user's primary group */
        gid_t *groups;    /* supplementary groups: the user's (getgrouplist()), none without a user name */
        size_t n_groups;
        char *user_name;  /* for messages: the name in the user database, else the number */
        char *group_name;
} ConfigIdentity;

typedef struct Config {
        char *path; /* the file it was read from; NULL for built-in defaults */

        /* [worker] */
        char **exec;           /* argv, NULL-terminated; split like a shell word list (quotes) */
        char *exec_line;       /* exec as written in the file (the quoted default otherwise); for logs */
        uint64_t memory_limit; /* bytes; 0 = none (no memory component) */
        double cpu_wall_cores; /* 1.0 */
        uint32_t concurrency;  /* executor size assumed for workers that report none; 0 = unknown */
        char **environment;    /* "KEY=VALUE" of environment=, one entry per key (its last value); NULL: none */
        char *environment_file;         /* absolute path; NULL: none */
        bool environment_file_optional; /* written "-PATH": a missing file is no error */
        char **environment_file_vars;   /* "KEY=VALUE" read from it by config_load(); environment= wins */
        char *working_directory;        /* absolute; NULL: the commander's own */
        char *user;                     /* name or id as written; NULL: the commander's */
        char *group;                    /* name or id as written; NULL: the user's primary group */
        ConfigIdentity identity;        /* user= and group= resolved by config_load() */

        /* [pool] */
        BackendKind backend;      /* auto */
        uint32_t min_workers;     /* 1 */
        uint32_t max_workers;     /* 0 = unbounded */
        uint64_t min_free_memory; /* bytes of MemAvailable below which spawning is refused; 0 = no check */
        usec_t spawn_timeout;     /* 10 s: spawn to Hello + accept */
        usec_t drain_timeout;     /* 30 s: in-flight requests of a retiring worker */
        usec_t stop_timeout;      /* 10 s: SIGTERM to SIGKILL */
        usec_t move_timeout;      /* 0 = hold_timeout / 2: a live move gives up past it */
        bool readopt;             /* yes: workers outlive a commander crash and the next one takes them back */
        usec_t adopt_timeout;     /* 15 s: a re-adopted worker's sensor must reconnect within it */
        usec_t hung_timeout;      /* 60 s: a worker silent (or out for unanswered requests) this long is
                                   * stopped and replaced; 0 = never */
        uint32_t unanswered_limit; /* 3: requests in a row a worker leaves unanswered before it takes no new
                                    * work; 0 = never */
        ReloadState reload_state; /* repoint */
        usec_t reload_timeout;    /* 10 min: a rolling reload still running then retires what is left */

        /* [policy] */
        double reception_threshold; /* 0.5 */
        double admission_threshold; /* 0.8 */
        double compaction_margin;   /* 1.5 */
        usec_t occupancy_interval;  /* 5 s: the report interval asked of sensors */
        uint32_t window_rows;       /* 60 */
        uint32_t smoothing_rows;    /* 6 */
        uint32_t stale_after;       /* 3 intervals */
        bool relief_moves;          /* yes: a worker over admission hands its heaviest users on */
        double rps_target;          /* requests/s per worker; 0 = request-rate scaling off */
        usec_t rps_up_window;       /* 30 s: the sustained rate that grows the pool */
        usec_t rps_down_window;     /* 120 s: the sustained rate that lets it shrink */
        char *decision_log;         /* every policy decision with its inputs, for elastic-pool-replay; NULL = none */
        usec_t burst_window;        /* 1.5 s: every worker saturated this long spawns at once; 0 = burst path off */
        uint32_t burst_queue;       /* 8: requests waiting for a worker that make it saturated */

        /* [frontend] */
        char *listen[CONFIG_LISTEN_MAX + 1]; /* "IPV4:PORT" / "[IPV6]:PORT"; NULL-terminated; default
                                              * 127.0.0.1:8080; may be empty (sockets from systemd only) */
        char *admin_listen;                  /* loopback address or Unix path; NULL = none */
        bool admin_allow_public;             /* no: admin_listen must be loopback or a Unix path */
        usec_t admin_population_timeout;     /* 1 s: each worker's /_monitor/state answer */
        usec_t header_timeout;               /* 10 s */
        usec_t idle_timeout;                 /* 60 s keep-alive idle */
        usec_t response_timeout;             /* 60 s worker response */
        usec_t hold_timeout;                 /* 10 s: requests held while their user moves */
        usec_t shutdown_timeout;             /* 30 s: hard deadline on SIGTERM */
        uint64_t max_header_size;            /* 64 KiB */
        uint32_t max_header_fields;          /* 100 */
        uint64_t max_body_size;              /* 0 = unlimited */
        uint32_t max_connections;            /* 10000 */
        uint32_t h2_max_concurrent_streams;  /* 100 */
        uint32_t upstream_connections;       /* 64 per worker */
        char **trusted_proxies;              /* addresses (ADDR or ADDR/PREFIX, or CONFIG_TRUSTED_UNIX) whose
                                              * X-Forwarded-Proto is believed; NULL-terminated, NULL: none */
        usec_t cookie_max_age;               /* 7 d */
        uint32_t max_revoked_users;          /* 100000 logouts kept on record (their cookies revoked) */
        usec_t user_expiry;                  /* 0 = cookie_max_age: a user without a request for this long
                                              * leaves the surface (config_user_expiry()) */
        bool websocket;                      /* yes: Upgrade: websocket (h1) and extended CONNECT (h2) are
                                              * tunnelled to the worker; no: served as plain requests */
        usec_t websocket_idle_timeout;       /* 10 min: a tunnel with no byte either way is ended (1001) */
        uint64_t min_body_rate;              /* 512 bytes/s a request body must average over each
                                              * header_timeout; 0 = no rate, only the idle_timeout stall */
        double client_worker_share;          /* 0.5: (0, 1] of a worker's queue one client may fill; freed
                                              * upstream connections go to the client holding the fewest */
        bool io_uring;                       /* yes: the front end's socket reads and writes go to the
                                              * kernel in batches through io_uring where it can have one */

        /* Line of the last assignment of each key in path; 0 = not set by the file (default, or set in
         * code). Cross-key errors name these lines. */
        unsigned line[_CONFIG_KEY_MAX];
} Config;

/* How long a live move may take before it is aborted. */
static inline usec_t config_move_timeout(const Config *c) {
        return c->move_timeout > 0 ? c->move_timeout : c->hold_timeout / 2;
}

/* How long a user may go without a request before it leaves the surface. */
static inline usec_t config_user_expiry(const Config *c) {
        return c->user_expiry > 0 ? c->user_expiry : c->cookie_max_age;
}

/* Fills c with the built-in defaults (exec = the bundled demo worker). c's previous contents are not
 * freed. 0 or -ENOMEM (c is then zeroed). */
int config_init_defaults(Config *c);
/* Frees everything c owns and zeroes it; safe on a zeroed or already-done Config. */
void config_done(Config *c);

/* Reads path on top of the built-in defaults and validates the result. What the [worker] runtime
 * settings name is read here too (config-worker.h): environment_file's variables, the ids of user= and
 * group=, the existence of working_directory; a reload reads them again. *c must be zeroed or hold a
 * configuration: on success its old contents are freed and replaced, on error it is left untouched
 * (so a failed reload keeps the running configuration).
 * On error returns negative errno and stores one message "PATH:LINE: [section] key: what is wrong" in
 * *ret_error (malloc()ed; NULL on -ENOMEM; ret_error itself may be NULL). The first error stops
 * parsing. -ENOENT etc. when the file cannot be opened or read (message "PATH: cannot open: ..."),
 * -EINVAL for anything wrong in its contents or in what they name (an environment file that cannot be
 * read, an unknown user included). On success *ret_error is set to NULL. */
int config_load(Config *c, const char *path, char **ret_error);

/* Every per-key rule (ranges, positivity, addresses, exec) and the cross-key rules (min_workers <=
 * max_workers, smoothing_rows <= window_rows, admin_listen apart from listen), so it also checks a
 * Config built in code; config_load() runs it. 0, -EINVAL with *ret_error set, or -ENOMEM. */
int config_validate(const Config *c, char **ret_error);

/* Splits a command line into argv like a shell word list without expansion: blanks separate words,
 * '...' is literal, "..." honours \\ \" \$ \` only, a backslash outside quotes takes the next character
 * literally. 0; -EINVAL with *ret_reason (static text) for an unterminated quote, a trailing backslash or
 * an empty command; -ENOMEM. */
int config_exec_split(const char *line, char ***ret_argv, const char **ret_reason);
/* Joins argv back into one line, quoting where needed, so that config_exec_split() gives argv back.
 * malloc()ed; NULL on -ENOMEM. */
char *config_exec_to_string(char *const *argv);

/* Loopback (127.0.0.0/8, ::1) or a Unix socket: reachable from this host only. */
bool config_address_is_local(const struct sockaddr_storage *sa);

/* Parses "IPV4:PORT", "[IPV6]:PORT" or, when unix_ok, an absolute Unix socket path into *ret and
 * *ret_len. Hostnames are not resolved. 0 or -EINVAL. */
int config_parse_socket_address(const char *s, bool unix_ok, struct sockaddr_storage *ret,
                                socklen_t *ret_len);

typedef struct ConfigPrefix {
        int family; /* AF_INET or AF_INET6 */
        union {
                struct in_addr in;
                struct in6_addr in6;
        } address;
        unsigned prefixlen; /* 32 / 128 for a single address */
} ConfigPrefix;

/* The trusted_proxies entry that trusts peers of a Unix socket listener (one systemd handed over). */
#define CONFIG_TRUSTED_UNIX "unix"

/* Parses a trusted_proxies entry: "ADDR" or "ADDR/PREFIXLEN", IPv4 or IPv6 (no brackets). 0 or -EINVAL. */
int config_parse_ip_prefix(const char *s, ConfigPrefix *ret);
