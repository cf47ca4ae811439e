/* SPDX-License-Identifier: MIT */
#include "config-worker.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "macro.h"
#include "parse-util.h"

/* Longest quote of the file's text in a message; longer text is cut short with "...". */
#define QUOTE_MAX 64

static bool isempty(const char *s) {
        return !s || *s == 0;
}

/* s as quoted in a message: cut short past QUOTE_MAX. */
static const char *shown(const char *s, char buf[static QUOTE_MAX + 4]) {
        if (strlen(s) <= QUOTE_MAX)
                return s;
        snprintf(buf, QUOTE_MAX + 4, "%.*s...", QUOTE_MAX, s);
        return buf;
}

/* *ret_error = the message; returns error, or -ENOMEM when the message cannot be made. */
_printf_(3, 4) static int fail(char **ret_error, int error, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(ret_error, format, ap);
        va_end(ap);
        if (r < 0) {
                *ret_error = NULL;
                return -ENOMEM;
        }
        return error;
}

/* ---- environment lists ---- */

char **config_env_free(char **l) {
        for (char **i = l; i && *i; i++)
                free(*i);
        free(l);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, config_env_free);

size_t config_env_length(char *const *l) {
        size_t n = 0;

        while (l && l[n])
                n++;
        return n;
}

static char *const *env_find(char *const *l, const char *key, size_t len) {
        for (; l && *l; l++)
                if (strncmp(*l, key, len) == 0 && (*l)[len] == '=')
                        return l;
        return NULL;
}

const char *config_env_get(char *const *l, const char *key) {
        size_t len = strlen(key);
        char *const *e = env_find(l, key, len);

        return e ? *e + len + 1 : NULL;
}

int config_env_set(char ***l, const char *assignment) {
        char *const *e = env_find(*l, assignment, strcspn(assignment, "="));
        char *copy = strdup(assignment), **t;
        size_t n;

        if (!copy)
                return -ENOMEM;
        if (e) {
                size_t i = (size_t) (e - *l);
                free((*l)[i]);
                (*l)[i] = copy;
                return 0;
        }
        n = config_env_length(*l);
        t = reallocarray(*l, n + 2, sizeof(char *));
        if (!t) {
                free(copy);
                return -ENOMEM;
        }
        t[n] = copy;
        t[n + 1] = NULL;
        *l = t;
        return 0;
}

static bool key_is(const char *key, size_t len, const char *name) {
        return strlen(name) == len && strncmp(key, name, len) == 0;
}

int config_env_check(const char *assignment, char **ret_error) {
        size_t len = strcspn(assignment, "=");
        const char *key = assignment;
        char buf[QUOTE_MAX + 4];
        const char *a = shown(assignment, buf);

        if (assignment[len] != '=')
                return fail(ret_error, -EINVAL, "'%s' is not an assignment (KEY=VALUE)", a);
        if (len == 0)
                return fail(ret_error, -EINVAL, "'%s': no variable name before the '='", a);
        for (size_t i = 0; i < len; i++)
                if (!(isalnum((unsigned char) key[i]) || key[i] == '_') ||
                    (i == 0 && isdigit((unsigned char) key[0])))
                        return fail(ret_error, -EINVAL,
                                    "'%s': '%.*s' is not a variable name (letters, digits and '_', not "
                                    "starting with a digit)",
                                    a, (int) MIN(len, (size_t) QUOTE_MAX), key);
        if (key_is(key, len, "LISTEN_FDS") || key_is(key, len, "LISTEN_PID") ||
            key_is(key, len, "LISTEN_FDNAMES"))
                return fail(ret_error, -EINVAL,
                            "'%s': %.*s is set by the commander for each worker (the handover of its "
                            "listening socket)",
                            a, (int) len, key);
        if (key_is(key, len, "NOTIFY_SOCKET"))
                return fail(ret_error, -EINVAL,
                            "'%s': NOTIFY_SOCKET would let a worker speak for the service to systemd; the "
                            "commander alone does",
                            a);
        if (strncmp(key, "ELASTIC_POOL_", strlen("ELASTIC_POOL_")) == 0)
                return fail(ret_error, -EINVAL,
                            "'%s': ELASTIC_POOL_* variables are set by the commander for each worker (its "
                            "channel, group and number)",
                            a);
        *ret_error = NULL;
        return 0;
}

int config_env_assign(char ***l, const char *value, char **ret_error) {
        _cleanup_(config_env_freep) char **words = NULL;
        const char *reason;
        int r;

        *ret_error = NULL;
        /* systemd's Environment=: an empty assignment resets the list */
        if (isempty(value) || value[strspn(value, " \t\n\r\v\f")] == 0) {
                *l = config_env_free(*l);
                return 0;
        }
        r = config_exec_split(value, &words, &reason);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return fail(ret_error, -EINVAL, "%s", reason);
        /* every word checked before the list changes: a refused line leaves it as it was */
        for (char **w = words; *w; w++) {
                r = config_env_check(*w, ret_error);
                if (r < 0)
                        return r;
        }
        for (char **w = words; *w; w++) {
                r = config_env_set(l, *w);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- the environment file ---- */

/* The text after '=' (blanks before it skipped): wrapped whole in quotes, or taken as is without its
 * trailing blanks. *ret_reason says what is wrong. */
static int env_value_unquote(const char *s, char **ret, const char **ret_reason) {
        _cleanup_free_ char *v = NULL;
        size_t n = strlen(s);
        char quote = *s, *o;

        if (quote != '\'' && quote != '"') {
                while (n > 0 && isspace((unsigned char) s[n - 1]))
                        n--;
                *ret = strndup(s, n);
                return *ret ? 0 : -ENOMEM;
        }
        o = v = malloc(n + 1);
        if (!v)
                return -ENOMEM;
        for (s++; *s != quote; s++) {
                if (*s == 0) {
                        *ret_reason =
                                quote == '\'' ? "unterminated single quote" : "unterminated double quote";
                        return -EINVAL;
                }
                /* as in exec=: inside "..." a backslash escapes only these */
                if (quote == '"' && *s == '\\' && s[1] != 0 && strchr("\\\"$`", s[1]))
                        s++;
                *o++ = *s;
        }
        *o = 0;
        for (s++; *s; s++)
                if (!isspace((unsigned char) *s)) {
                        *ret_reason = "text after the closing quote";
                        return -EINVAL;
                }
        *ret = TAKE_PTR(v);
        return 0;
}

/* One line of the file (its line ending removed) into *l. */
static int env_file_line(char ***l, const char *path, unsigned line, const char *text, char **ret_error) {
        _cleanup_free_ char *value = NULL, *assignment = NULL, *why = NULL;
        const char *s = text + strspn(text, " \t\v\f"), *eq, *key_end, *reason = NULL;
        char buf[QUOTE_MAX + 4];
        int r;

        if (*s == 0 || *s == '#' || *s == ';')
                return 0;
        eq = strchr(s, '=');
        if (!eq)
                return fail(ret_error, -EINVAL, "%s:%u: expected KEY=VALUE, got '%s'", path, line,
                            shown(s, buf));
        for (key_end = eq; key_end > s && isspace((unsigned char) key_end[-1]); key_end--)
                ;
        r = env_value_unquote(eq + 1 + strspn(eq + 1, " \t\v\f"), &value, &reason);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return fail(ret_error, -EINVAL, "%s:%u: %.*s: %s", path, line,
                            (int) MIN((size_t) (key_end - s), (size_t) QUOTE_MAX), s, reason);
        if (asprintf(&assignment, "%.*s=%s", (int) (key_end - s), s, value) < 0)
                return -ENOMEM;
        r = config_env_check(assignment, &why);
        if (r == -EINVAL)
                return fail(ret_error, r, "%s:%u: %s", path, line, why);
        if (r < 0)
                return r;
        return config_env_set(l, assignment);
}

int config_env_file_read(const char *path, char ***ret, char **ret_error) {
        _cleanup_(config_env_freep) char **l = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        unsigned line = 0;
        ssize_t n;
        int r;

        *ret_error = NULL;
        f = fopen(path, "re");
        if (!f)
                return fail(ret_error, -errno, "cannot open '%s': %m", path);
        for (;;) {
                errno = 0;
                n = getline(&buf, &size, f);
                if (n < 0)
                        break;
                line++;
                if (memchr(buf, 0, (size_t) n))
                        return fail(ret_error, -EINVAL, "%s:%u: line contains a NUL byte", path, line);
                while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
                        buf[--n] = 0;
                /* a byte order mark, as an editor may write it */
                r = env_file_line(&l, path, line,
                                  line == 1 && startswith(buf, "\xEF\xBB\xBF") ? buf + 3 : buf, ret_error);
                if (r < 0)
                        return r;
        }
        if (ferror(f)) {
                int e = errno > 0 ? errno : EIO;
                return fail(ret_error, -e, "cannot read '%s': %s", path, strerror(e));
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* ---- user= and group= ---- */

void config_identity_done(ConfigIdentity *id) {
        free(id->groups);
        free(id->user_name);
        free(id->group_name);
        *id = (ConfigIdentity){};
}

/* A user or group written as a number: digits only, and not (uid_t) -1, which means "no change" to the
 * kernel. */
static bool parse_id(const char *s, uint32_t *ret) {
        return s[0] != 0 && strspn(s, "0123456789") == strlen(s) && parse_uint32(s, ret) >= 0 &&
               *ret != UINT32_MAX;
}

/* The lookup functions return NULL with errno 0 or one of these when there is no such entry. */
static bool lookup_missed(int e) {
        return e == 0 || e == ENOENT || e == ESRCH || e == EBADF || e == EPERM;
}

/* Fills id->uid, id->user_name and, when the user database has it, id->gid (*ret_has_primary). */
static int resolve_user(const char *user, ConfigIdentity *id, bool *ret_has_primary, char **ret_error) {
        struct passwd *pw;
        uint32_t n;
        bool numeric = parse_id(user, &n);

        errno = 0;
        pw = numeric ? getpwuid(n) : getpwnam(user);
        if (!pw && !lookup_missed(errno))
                return fail(ret_error, -EINVAL, "cannot look up user '%s': %m", user);
        if (!pw && !numeric)
                return fail(ret_error, -EINVAL, "unknown user '%s' (not in the user database)", user);
        *ret_has_primary = pw != NULL;
        id->uid = pw ? pw->pw_uid : n;
        if (pw)
                id->gid = pw->pw_gid;
        id->user_name = strdup(pw ? pw->pw_name : user);
        return id->user_name ? 0 : -ENOMEM;
}

static int resolve_group(const char *group, ConfigIdentity *id, char **ret_error) {
        struct group *gr;
        uint32_t n;
        bool numeric = parse_id(group, &n);

        errno = 0;
        gr = numeric ? getgrgid(n) : getgrnam(group);
        if (!gr && !lookup_missed(errno))
                return fail(ret_error, -EINVAL, "cannot look up group '%s': %m", group);
        if (!gr && !numeric)
                return fail(ret_error, -EINVAL, "unknown group '%s' (not in the group database)", group);
        /* a gid is only a number to the kernel: one without a name is still one a process can have */
        id->gid = gr ? gr->gr_gid : n;
        free(id->group_name);
        id->group_name = strdup(gr ? gr->gr_name : group);
        return id->group_name ? 0 : -ENOMEM;
}

/* The name of the group gid for messages: the group database's, else the number. */
static int name_group(ConfigIdentity *id) {
        struct group *gr = getgrgid(id->gid);

        if (gr)
                id->group_name = strdup(gr->gr_name);
        else if (asprintf(&id->group_name, "%u", (unsigned) id->gid) < 0)
                id->group_name = NULL;
        return id->group_name ? 0 : -ENOMEM;
}

/* What initgroups(user, gid) would set: gid and every group that lists user as a member. */
static int user_groups(const char *user, gid_t gid, gid_t **ret, size_t *ret_n) {
        _cleanup_free_ gid_t *groups = NULL;
        int n = 32;

        for (;;) {
                int want = n;
                gid_t *t = reallocarray(groups, (size_t) n, sizeof(gid_t));
                if (!t)
                        return -ENOMEM;
                groups = t;
                if (getgrouplist(user, gid, groups, &n) >= 0)
                        break;
                /* too small: n now says how many there are */
                if (n <= want)
                        n = want * 2;
                if (n > NGROUPS_MAX)
                        return -E2BIG;
        }
        *ret = TAKE_PTR(groups);
        *ret_n = (size_t) n;
        return 0;
}

/* Only root may give a worker other ids than its own: setresuid() and setgroups() need CAP_SETUID and
 * CAP_SETGID, and a commander without them would find out at every spawn. */
static int check_switch_allowed(const ConfigIdentity *id, const char *group, ConfigKey *ret_key,
                                char **ret_error) {
        if (geteuid() == 0)
                return 0;
        if (id->uid != geteuid()) {
                *ret_key = CONFIG_KEY_USER;
                return fail(ret_error, -EINVAL,
                            "'%s' (uid %u): the commander runs as uid %u, and only root can run workers as "
                            "another user",
                            id->user_name, (unsigned) id->uid, (unsigned) geteuid());
        }
        if (id->gid != getegid()) {
                *ret_key = group ? CONFIG_KEY_GROUP : CONFIG_KEY_USER;
                return fail(ret_error, -EINVAL,
                            "'%s' (gid %u): the commander runs as gid %u, and only root can run workers in "
                            "another group",
                            id->group_name, (unsigned) id->gid, (unsigned) getegid());
        }
        return 0;
}

int config_identity_resolve(const char *user, const char *group, ConfigIdentity *ret, ConfigKey *ret_key,
                            char **ret_error) {
        _cleanup_(config_identity_done) ConfigIdentity id = {};
        bool has_primary = false;
        int r;

        *ret_error = NULL;
        if (!user && !group) {
                *ret = (ConfigIdentity){};
                return 0;
        }
        id = (ConfigIdentity){.set = true, .uid = geteuid(), .gid = getegid()};
        *ret_key = CONFIG_KEY_USER;
        if (user) {
                r = resolve_user(user, &id, &has_primary, ret_error);
                if (r < 0)
                        return r;
                if (!has_primary && !group)
                        return fail(ret_error, -EINVAL,
                                    "uid %u has no entry in the user database, so no primary group: name "
                                    "one with group=",
                                    (unsigned) id.uid);
        } else {
                struct passwd *pw = getpwuid(id.uid);
                id.user_name = pw ? strdup(pw->pw_name) : NULL;
                if (!id.user_name && asprintf(&id.user_name, "%u", (unsigned) id.uid) < 0)
                        return -ENOMEM;
        }
        *ret_key = CONFIG_KEY_GROUP;
        r = group ? resolve_group(group, &id, ret_error) : name_group(&id);
        if (r < 0)
                return r;
        r = check_switch_allowed(&id, group, ret_key, ret_error);
        if (r < 0)
                return r;
        /* only root sets groups, and a uid without a name has no memberships to look up; without user=
         * the worker gets group= alone, not the commander's supplementary groups */
        if (geteuid() == 0 && user && has_primary) {
                r = user_groups(id.user_name, id.gid, &id.groups, &id.n_groups);
                *ret_key = CONFIG_KEY_USER;
                if (r == -E2BIG)
                        return fail(ret_error, -EINVAL, "'%s' is in more than %d groups", id.user_name,
                                    NGROUPS_MAX);
                if (r < 0)
                        return r;
        }
        *ret = id;
        id = (ConfigIdentity){};
        return 0;
}

int config_working_directory_check(const char *path, char **ret_error) {
        struct stat st;

        *ret_error = NULL;
        if (stat(path, &st) < 0)
                return fail(ret_error, -EINVAL, "'%s': %m", path);
        if (!S_ISDIR(st.st_mode))
                return fail(ret_error, -EINVAL, "'%s' is not a directory", path);
        return 0;
}

/* ---- the worker definition ---- */

int config_worker_environment(const Config *c, char ***ret) {
        _cleanup_(config_env_freep) char **l = NULL;
        int r;

        /* the file's first: environment= replaces a variable where the file set it */
        for (char **e = c->environment_file_vars; e && *e; e++) {
                r = config_env_set(&l, *e);
                if (r < 0)
                        return r;
        }
        for (char **e = c->environment; e && *e; e++) {
                r = config_env_set(&l, *e);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* FNV-1a: a digest compared with itself across reloads, not a defence against anyone. */
#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME  0x100000001b3ULL

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
        const uint8_t *b = p;

        for (size_t i = 0; i < n; i++) {
                h ^= b[i];
                h *= FNV_PRIME;
        }
        return h;
}

/* With its NUL, so that "ab","c" and "a","bc" differ; NULL adds nothing and so differs from "". */
static uint64_t fnv_string(uint64_t h, const char *s) {
        return s ? fnv(h, s, strlen(s) + 1) : h;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v) {
        return fnv(h, &v, sizeof v);
}

/* The order of variables is no part of what a worker is: a sum of each one's digest (the keys are
 * unique, so no two equal entries cancel out). */
static uint64_t digest_env(char *const *l, char *const *overridden) {
        uint64_t sum = 0;

        for (; l && *l; l++)
                if (!env_find(overridden, *l, strcspn(*l, "=")))
                        sum += fnv_string(FNV_OFFSET, *l);
        return sum;
}

static uint64_t digest_identity(const ConfigIdentity *id) {
        uint64_t h = fnv_u64(FNV_OFFSET, id->set), groups = 0;

        if (!id->set)
                return h;
        h = fnv_u64(fnv_u64(h, id->uid), id->gid);
        for (size_t i = 0; i < id->n_groups; i++)
                groups += fnv_u64(FNV_OFFSET, id->groups[i]);
        return fnv_u64(h, groups);
}

void config_worker_digest_parts(const Config *c, ConfigWorkerDigest *ret) {
        uint64_t exec = FNV_OFFSET;

        for (char **a = c->exec; a && *a; a++)
                exec = fnv_string(exec, *a);
        *ret = (ConfigWorkerDigest){
                .part =
                        {
                                [CONFIG_WORKER_EXEC] = exec,
                                [CONFIG_WORKER_MEMORY_LIMIT] = fnv_u64(FNV_OFFSET, c->memory_limit),
                                [CONFIG_WORKER_ENVIRONMENT] =
                                        digest_env(c->environment_file_vars, c->environment) +
                                        digest_env(c->environment, NULL),
                                [CONFIG_WORKER_WORKING_DIRECTORY] =
                                        fnv_string(FNV_OFFSET, c->working_directory),
                                [CONFIG_WORKER_IDENTITY] = digest_identity(&c->identity),
                        },
                .environment_assignments = digest_env(c->environment, NULL),
                .environment_file_vars = digest_env(c->environment_file_vars, NULL),
        };
}

uint64_t config_worker_digest(const Config *c) {
        ConfigWorkerDigest d;

        config_worker_digest_parts(c, &d);
        return fnv(FNV_OFFSET, d.part, sizeof d.part);
}

/* Appends to buf at *at, keeping it terminated however little room is left. */
_printf_(4, 5) static void append(char *buf, size_t size, size_t *at, const char *format, ...) {
        va_list ap;
        int n;

        if (*at >= size)
                return;
        va_start(ap, format);
        n = vsnprintf(buf + *at, size - *at, format, ap);
        va_end(ap);
        if (n > 0)
                *at = MIN(*at + (size_t) n, size);
}

static void describe_environment(const ConfigWorkerDigest *old, const ConfigWorkerDigest *now,
                                 const Config *c, char *buf, size_t size, size_t *at) {
        bool assignments = old->environment_assignments != now->environment_assignments;
        bool file = old->environment_file_vars != now->environment_file_vars;

        append(buf, size, at, "environment changed (");
        if (assignments)
                append(buf, size, at, "environment=%s", file ? ", " : "");
        if (file && c->environment_file)
                append(buf, size, at, "the variables of environment_file '%s'", c->environment_file);
        else if (file)
                append(buf, size, at, "no environment_file now");
        append(buf, size, at, ")");
}

static void describe_identity(const ConfigIdentity *id, char *buf, size_t size, size_t *at) {
        if (!id->set) {
                append(buf, size, at, "user and group changed to the commander's own");
                return;
        }
        append(buf, size, at, "user changed to '%s' (uid %u), group '%s' (gid %u), %zu supplementary group%s",
               id->user_name, (unsigned) id->uid, id->group_name, (unsigned) id->gid, id->n_groups,
               id->n_groups == 1 ? "" : "s");
}

unsigned config_worker_changes(const ConfigWorkerDigest *old, const Config *c, char *buf, size_t size) {
        ConfigWorkerDigest now;
        unsigned n = 0;
        size_t at = 0;

        config_worker_digest_parts(c, &now);
        if (size > 0)
                buf[0] = 0;
        for (ConfigWorkerPart p = 0; p < _CONFIG_WORKER_PART_MAX; p++) {
                if (old->part[p] == now.part[p])
                        continue;
                append(buf, size, &at, "%s", n++ > 0 ? "; " : "");
                switch (p) {
                case CONFIG_WORKER_EXEC:
                        append(buf, size, &at, "exec changed to '%s'", strempty(c->exec_line));
                        break;
                case CONFIG_WORKER_MEMORY_LIMIT:
                        append(buf, size, &at, "memory_limit changed to %llu",
                               (unsigned long long) c->memory_limit);
                        break;
                case CONFIG_WORKER_ENVIRONMENT:
                        describe_environment(old, &now, c, buf, size, &at);
                        break;
                case CONFIG_WORKER_WORKING_DIRECTORY:
                        if (c->working_directory)
                                append(buf, size, &at, "working_directory changed to '%s'",
                                       c->working_directory);
                        else
                                append(buf, size, &at, "working_directory changed to the commander's own");
                        break;
                case CONFIG_WORKER_IDENTITY:
                        describe_identity(&c->identity, buf, size, &at);
                        break;
                default:
                        break;
                }
        }
        return n;
}
