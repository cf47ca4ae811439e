/* SPDX-License-Identifier: MIT */
#pragma once

/* The users a worker announces after its Hello: gathered from the application's list callback through the
 * sink, checked, and cut into Users frames small enough for any commander to take in one read. Pure: no
 * I/O, no logging (the channel client says what was skipped). */

#include <stdbool.h>
#include <stddef.h>

#include "frame.h"

/* Four times the longest user a commander's cookie carries (256 bytes): past that it is not a user name
 * but a bug, and one of them must not cost every other user their place in the list. */
#define USER_LIST_NAME_MAX 1024U
/* Encoded names per Users frame: far under the 16 MiB frame maximum, and a long list still moves in
 * pieces a commander can decode without holding everything at once. */
#define USER_LIST_FRAME_BUDGET (1024U * 1024U)

typedef struct UserList {
        char *names; /* each NUL-terminated, one after the other */
        size_t size, allocated;
        size_t n;
        size_t skipped;              /* empty or over USER_LIST_NAME_MAX */
        size_t skipped_first_length; /* of the first skipped one, for the log */
} UserList;

void user_list_init(UserList *l);
void user_list_done(UserList *l);

/* The ep_sensor_user_sink: copies a name into the UserList sink_ctx, or counts it as skipped. 0 or
 * -ENOMEM. */
int user_list_add(void *sink_ctx, const char *user);

/* Cuts the list into Users messages whose names take at most budget encoded bytes each (one name at least),
 * each but the last with more = true, and calls push for each in order; an empty list gives one empty
 * message. Stops at and returns the first negative value push returns (or -ENOMEM), else 0. */
int user_list_foreach_frame(const UserList *l, size_t budget, int (*push)(void *userdata, const Frame *f),
                            void *userdata);
