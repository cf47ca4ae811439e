/* SPDX-License-Identifier: MIT */
#include "bus-api.h"

#include <stdio.h>
#include <string.h>

#include "macro.h"

static const char *const kind_names[_BUS_API_KIND_MAX] = {
        [BUS_API_NONE] = "none",
        [BUS_API_USER] = "user",
        [BUS_API_SYSTEM] = "system",
};

const char *bus_api_kind_to_string(BusApiKind k) {
        return k >= 0 && k < _BUS_API_KIND_MAX ? kind_names[k] : NULL;
}

BusApiKind bus_api_kind_from_string(const char *s) {
        if (!s)
                return _BUS_API_KIND_INVALID;
        for (BusApiKind k = 0; k < _BUS_API_KIND_MAX; k++)
                if (strcmp(s, kind_names[k]) == 0)
                        return k;
        return _BUS_API_KIND_INVALID;
}

BusApiKind bus_api_kind_default(uid_t uid) {
        return uid == 0 ? BUS_API_SYSTEM : BUS_API_USER;
}

static bool is_alnum(unsigned char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

int bus_api_group_label(const char *group, char *buf, size_t size) {
        static const char hex[] = "0123456789abcdef";
        size_t n = 0;

        if (size == 0)
                return -ENAMETOOLONG;
        if (!group || !group[0]) {
                if (size < 2)
                        return -ENAMETOOLONG;
                strcpy(buf, "_");
                return 0;
        }
        for (const unsigned char *p = (const unsigned char *) group; *p; p++) {
                bool escape =
                        !is_alnum(*p) || (p == (const unsigned char *) group && *p >= '0' && *p <= '9');

                if (n + (escape ? 3 : 1) >= size)
                        return -ENAMETOOLONG;
                if (escape) {
                        buf[n++] = '_';
                        buf[n++] = hex[*p >> 4];
                        buf[n++] = hex[*p & 15];
                } else
                        buf[n++] = (char) *p;
        }
        buf[n] = 0;
        return 0;
}

int bus_api_group_name(const char *group, char *buf, size_t size) {
        size_t prefix = strlen(BUS_API_NAME_PREFIX);

        size = MIN(size, (size_t) BUS_API_NAME_MAX);
        if (size <= prefix)
                return -ENAMETOOLONG;
        memcpy(buf, BUS_API_NAME_PREFIX, prefix);
        return bus_api_group_label(group, buf + prefix, size - prefix);
}
