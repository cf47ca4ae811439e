/* SPDX-License-Identifier: MIT */
#include "kernel-parse.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "macro.h"

static bool is_blank(char c) {
        return c == ' ' || c == '\t' || c == '\n';
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

/* Digits at s into *ret, *ret_end after them; at least one digit. 0, -EINVAL, -ERANGE. */
static int parse_u64_prefix(const char *s, const char **ret_end, uint64_t *ret) {
        uint64_t v = 0;

        if (!is_digit(*s))
                return -EINVAL;
        for (; is_digit(*s); s++) {
                unsigned d = (unsigned) (*s - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret_end = s;
        *ret = v;
        return 0;
}

int parse_decimal_fixed(const char *s, const char **ret_end, double *ret) {
        uint64_t whole, frac = 0;
        double scale = 1.0;
        int r;

        r = parse_u64_prefix(s, &s, &whole);
        if (r < 0)
                return -EINVAL;
        if (*s == '.') {
                s++;
                if (!is_digit(*s))
                        return -EINVAL;
                /* PSI and loadavg print two decimals; more are accepted, past 18 they are ignored */
                for (unsigned n = 0; is_digit(*s); s++, n++)
                        if (n < 18) {
                                frac = frac * 10 + (uint64_t) (*s - '0');
                                scale *= 10.0;
                        }
        }
        *ret_end = s;
        *ret = (double) whole + (double) frac / scale;
        return 0;
}

/* Finds the line starting with `key` (at the start of content or after a newline); the rest of that line
 * follows the returned pointer. NULL when there is none. */
static const char *find_line(const char *content, const char *key) {
        size_t l = strlen(key);

        for (const char *p = content; p;) {
                if (strncmp(p, key, l) == 0)
                        return p + l;
                p = strchr(p, '\n');
                if (p)
                        p++;
        }
        return NULL;
}

static bool controller_list_has(const char *list, size_t len, const char *name) {
        size_t n = strlen(name);
        const char *p = list, *end = list + len;

        while (p < end) {
                const char *comma = memchr(p, ',', (size_t) (end - p));
                size_t l = comma ? (size_t) (comma - p) : (size_t) (end - p);

                if (l == n && memcmp(p, name, n) == 0)
                        return true;
                if (!comma)
                        break;
                p = comma + 1;
        }
        return false;
}

static int replace_with(char **dest, const char *start, size_t len) {
        char *copy;

        if (len == 0) /* "0::" with nothing after it is not a usable path */
                return 0;
        copy = strndup(start, len);
        if (!copy)
                return -ENOMEM;
        free(*dest);
        *dest = copy;
        return 0;
}

int parse_cgroup_membership(const char *content, char **ret_v2_path, char **ret_v1_memory_path) {
        _cleanup_free_ char *v2 = NULL, *v1 = NULL;
        int r;

        for (const char *line = content; *line;) {
                const char *eol = strchrnul(line, '\n');
                const char *c1 = memchr(line, ':', (size_t) (eol - line));
                const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t) (eol - c1 - 1)) : NULL;

                /* "ID:CONTROLLERS:PATH"; the path is the rest of the line and may itself hold colons */
                if (c2) {
                        const char *path = c2 + 1;
                        size_t plen = (size_t) (eol - path);

                        if (c1 == line + 1 && line[0] == '0' && c2 == c1 + 1)
                                r = replace_with(&v2, path, plen);
                        else if (controller_list_has(c1 + 1, (size_t) (c2 - c1 - 1), "memory"))
                                r = replace_with(&v1, path, plen);
                        else
                                r = 0;
                        if (r < 0)
                                return r;
                }
                line = *eol ? eol + 1 : eol;
        }
        *ret_v2_path = TAKE_PTR(v2);
        *ret_v1_memory_path = TAKE_PTR(v1);
        return 0;
}

int parse_cpu_stat_usage(const char *content, uint64_t *ret_usec) {
        const char *p = find_line(content, "usage_usec ");
        uint64_t v;
        int r;

        if (!p)
                return -EINVAL;
        r = parse_u64_prefix(p, &p, &v);
        if (r < 0)
                return r;
        if (*p && !is_blank(*p))
                return -EINVAL;
        *ret_usec = v;
        return 0;
}

int parse_psi_some_avg10(const char *content, double *ret) {
        const char *p = find_line(content, "some "), *eol, *v;

        if (!p)
                return -EINVAL;
        eol = strchrnul(p, '\n');
        v = strstr(p, "avg10=");
        if (!v || v > eol)
                return -EINVAL;
        return parse_decimal_fixed(v + strlen("avg10="), &v, ret);
}

int parse_loadavg(const char *content, double ret[3]) {
        const char *p = content;
        double v[3];

        for (unsigned i = 0; i < 3; i++) {
                while (is_blank(*p))
                        p++;
                if (parse_decimal_fixed(p, &p, &v[i]) < 0)
                        return -EINVAL;
                if (*p && !is_blank(*p))
                        return -EINVAL;
        }
        memcpy(ret, v, sizeof v);
        return 0;
}

/* Skips one blank-separated token; returns its start, or NULL at the end of the string. */
static const char *next_token(const char **p) {
        const char *start;

        while (is_blank(**p))
                (*p)++;
        if (**p == 0)
                return NULL;
        start = *p;
        while (**p && !is_blank(**p))
                (*p)++;
        return start;
}

/* A token that is a number; a negative one (the kernel prints cutime/cstime as signed) reads as 0. */
static int token_u64(const char *t, uint64_t *ret) {
        const char *end;
        uint64_t v;
        bool negative = *t == '-';
        int r;

        r = parse_u64_prefix(t + negative, &end, &v);
        if (r < 0)
                return r;
        if (*end && !is_blank(*end))
                return -EINVAL;
        *ret = negative ? 0 : v;
        return 0;
}

int parse_proc_stat(const char *content, ProcStat *ret) {
        /* fields counted from just after "(comm)": 0 state, 1 ppid, ..., 11 utime, 12 stime, 13 cutime,
         * 14 cstime (proc(5) numbers them 3, 4, ..., 14, 15, 16, 17) */
        const char *p = strrchr(content, ')');
        uint64_t f[15];
        int r;

        if (!p)
                return -EINVAL;
        p++;
        for (unsigned i = 0; i < ELEMENTSOF(f); i++) {
                const char *t = next_token(&p);
                if (!t)
                        return -EINVAL;
                if (i == 0) /* the state letter */
                        continue;
                r = token_u64(t, &f[i]);
                if (r < 0)
                        return -EINVAL;
        }
        if (f[1] > INT32_MAX)
                return -EINVAL;
        *ret = (ProcStat) {
                .ppid = (pid_t) f[1],
                .utime = f[11],
                .stime = f[12],
                .cutime = f[13],
                .cstime = f[14],
        };
        return 0;
}

int parse_statm_resident(const char *content, uint64_t *ret_pages) {
        const char *p = content, *t;

        if (!next_token(&p))
                return -EINVAL;
        t = next_token(&p);
        if (!t)
                return -EINVAL;
        return token_u64(t, ret_pages) < 0 ? -EINVAL : 0;
}

int parse_pid_list_next(const char **p, pid_t *ret_pid) {
        const char *s = *p;
        uint64_t v;

        while (is_blank(*s))
                s++;
        if (*s == 0) {
                *p = s;
                return 0;
        }
        if (parse_u64_prefix(s, &s, &v) < 0 || v == 0 || v > INT32_MAX)
                return -EINVAL;
        if (*s && !is_blank(*s))
                return -EINVAL;
        *p = s;
        *ret_pid = (pid_t) v;
        return 1;
}
