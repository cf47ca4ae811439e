/* SPDX-License-Identifier: MIT */
#include "user-list.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "macro.h"

void user_list_init(UserList *l) {
        *l = (UserList) {};
}

void user_list_done(UserList *l) {
        free(l->names);
        user_list_init(l);
}

static int reserve(UserList *l, size_t extra) {
        size_t need = l->size + extra;
        char *p;

        if (need <= l->allocated)
                return 0;
        need = MAX(need, MAX(l->allocated * 2, (size_t) 4096));
        p = realloc(l->names, need);
        if (!p)
                return -ENOMEM;
        l->names = p;
        l->allocated = need;
        return 0;
}

int user_list_add(void *sink_ctx, const char *user) {
        UserList *l = sink_ctx;
        size_t len = user ? strnlen(user, USER_LIST_NAME_MAX + 1) : 0;
        int r;

        if (len == 0 || len > USER_LIST_NAME_MAX) {
                if (l->skipped++ == 0)
                        l->skipped_first_length = user ? strlen(user) : 0;
                return 0;
        }
        r = reserve(l, len + 1);
        if (r < 0)
                return r;
        memcpy(l->names + l->size, user, len + 1);
        l->size += len + 1;
        l->n++;
        return 0;
}

/* What one name adds to a packed Users message: the field's tag, the length varint, the bytes. */
static size_t encoded_size(size_t len) {
        size_t varint = 1;

        for (size_t v = len; v >= 0x80; v >>= 7)
                varint++;
        return 1 + varint + len;
}

/* Points names[] at every name of the list, in order. */
static void index_names(const UserList *l, char **names) {
        size_t i = 0;

        for (char *p = l->names; p && p < l->names + l->size; p += strlen(p) + 1)
                names[i++] = p;
}

/* How many names from the first on fit in budget; one at least, whatever its size. */
static size_t chunk_length(char **names, size_t n, size_t budget) {
        size_t used = 0, k = 0;

        for (; k < n; k++) {
                size_t cost = encoded_size(strlen(names[k]));
                if (k > 0 && used + cost > budget)
                        break;
                used += cost;
        }
        return k;
}

static int push_users(char **names, size_t n, bool more, int (*push)(void *userdata, const Frame *f),
                      void *userdata) {
        ElasticPool__Users m = ELASTIC_POOL__USERS__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;

        m.users = names;
        m.n_users = n;
        /* the last frame leaves it absent: absent reads as false, and it ends the set */
        m.has_more = more;
        m.more = more;
        f.body_case = ELASTIC_POOL__FRAME__BODY_USERS;
        f.users = &m;
        return push(userdata, &f);
}

int user_list_foreach_frame(const UserList *l, size_t budget, int (*push)(void *userdata, const Frame *f),
                            void *userdata) {
        _cleanup_free_ char **names = NULL;
        size_t done = 0;

        if (l->n == 0)
                return push_users(NULL, 0, false, push, userdata);
        names = malloc(l->n * sizeof *names);
        if (!names)
                return -ENOMEM;
        index_names(l, names);
        while (done < l->n) {
                size_t k = chunk_length(names + done, l->n - done, budget);
                int r;

                r = push_users(names + done, k, done + k < l->n, push, userdata);
                if (r < 0)
                        return r;
                done += k;
        }
        return 0;
}
