/* SPDX-License-Identifier: MIT */
#include "parse-util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"

static const char *skip_blanks(const char *s) {
        while (*s && isspace((unsigned char) *s))
                s++;
        return s;
}

static bool only_blanks(const char *s) {
        return *skip_blanks(s) == 0;
}

int parse_uint64(const char *s, uint64_t *ret) {
        unsigned long long v;
        char *end;

        s = skip_blanks(s);
        if (!isdigit((unsigned char) *s)) /* refuses "-1", which strtoull would wrap */
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (end == s || !only_blanks(end)) /* malformed before out of range: "99999999999999999999x" */
                return -EINVAL;
        if (errno == ERANGE)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_uint32(const char *s, uint32_t *ret) {
        uint64_t v;
        int r;

        r = parse_uint64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT32_MAX)
                return -ERANGE;
        *ret = (uint32_t) v;
        return 0;
}

int parse_double(const char *s, double *ret) {
        char *end;
        double v;

        s = skip_blanks(s);
        if (*s == 0)
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (end == s || !only_blanks(end))
                return -EINVAL;
        /* overflow comes back as ±HUGE_VAL with ERANGE: that is "does not fit", while a literal "inf" or
         * "nan" is not a number we take at all */
        if (errno == ERANGE)
                return -ERANGE;
        if (!isfinite(v))
                return -EINVAL;
        *ret = v;
        return 0;
}

/* Whether the len bytes at s spell word, ignoring case. */
static bool word_is(const char *s, size_t len, const char *word) {
        return strlen(word) == len && strncasecmp(s, word, len) == 0;
}

int parse_boolean(const char *s, bool *ret) {
        static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
        static const char *const no[] = { "0", "no", "n", "false", "f", "off" };
        size_t len;

        /* surrounding blanks allowed, as for every parser here */
        s = skip_blanks(s);
        len = strlen(s);
        while (len > 0 && isspace((unsigned char) s[len - 1]))
                len--;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (word_is(s, len, yes[i])) {
                        *ret = true;
                        return 0;
                }
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (word_is(s, len, no[i])) {
                        *ret = false;
                        return 0;
                }
        return -EINVAL;
}

/* Splits "<number><unit>" and looks the unit up in a table; shared by sizes and durations. */
typedef struct Unit {
        const char *suffix;
        double factor;
} Unit;

static int parse_with_units(const char *s, const Unit *units, size_t n_units, double default_factor,
                            double *ret) {
        char *end;
        double v;

        s = skip_blanks(s);
        if (!isdigit((unsigned char) *s) && *s != '.')
                return -EINVAL;
        /* strtod() also reads hexadecimal ("0x10" = 16, "0x1p4" = 16): decimal only */
        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (errno == ERANGE || !isfinite(v))
                return -ERANGE;
        if (end == s)
                return -EINVAL;

        const char *u = skip_blanks(end);
        size_t len = strlen(u);
        while (len > 0 && isspace((unsigned char) u[len - 1]))
                len--;
        if (len == 0) {
                *ret = v * default_factor;
                return 0;
        }
        for (size_t i = 0; i < n_units; i++)
                if (strlen(units[i].suffix) == len && strncasecmp(u, units[i].suffix, len) == 0) {
                        *ret = v * units[i].factor;
                        return 0;
                }
        return -EINVAL;
}

int parse_size(const char *s, uint64_t *ret) {
        static const Unit units[] = {
                { "B", 1.0 },
                { "K", 1024.0 }, { "KB", 1024.0 }, { "KiB", 1024.0 },
                { "M", 1048576.0 }, { "MB", 1048576.0 }, { "MiB", 1048576.0 },
                { "G", 1073741824.0 }, { "GB", 1073741824.0 }, { "GiB", 1073741824.0 },
                { "T", 1099511627776.0 }, { "TB", 1099511627776.0 }, { "TiB", 1099511627776.0 },
        };
        double v;
        int r;

        r = parse_with_units(s, units, ELEMENTSOF(units), 1.0, &v);
        if (r < 0)
                return r;
        if (v >= 18446744073709551616.0)
                return -ERANGE;
        *ret = (uint64_t) v;
        return 0;
}

int parse_duration(const char *s, usec_t *ret) {
        static const Unit units[] = {
                { "us", 1.0 }, { "usec", 1.0 },
                { "ms", 1e3 }, { "msec", 1e3 },
                { "s", 1e6 }, { "sec", 1e6 },
                { "m", 60e6 }, { "min", 60e6 },
                { "h", 3600e6 }, { "hr", 3600e6 },
                { "d", 86400e6 },
        };
        double v;
        int r;

        r = parse_with_units(s, units, ELEMENTSOF(units), 1e6, &v);
        if (r < 0)
                return r;
        /* Not llround(): its long long cannot hold spans from 2^63 µs up. Below 2^64 the largest double
         * is 2^64 - 2048, so a parsed span always fits and never equals USEC_INFINITY. */
        if (v >= 18446744073709551616.0)
                return -ERANGE;
        *ret = (usec_t) round(v);
        return 0;
}
