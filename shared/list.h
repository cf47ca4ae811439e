/* SPDX-License-Identifier: MIT */
#pragma once

/* Intrusive doubly linked lists, the shape the daemon keeps its connections, streams, moves and queues
 * in. An element carries its own two links, whose names are arguments (prev/next, open_prev/open_next,
 * older/newer), so that one element can sit in several lists at once. A list is a head pointer, or a
 * head and a tail where the order of arrival matters (QUEUE_*). Removal is O(1) and clears the element's
 * links. The arguments are evaluated more than once: pass plain lvalues, never calls. */

#include <stddef.h>

#define LIST_PREPEND(head, item, prev, next)   \
        do {                                   \
                (item)->prev = NULL;           \
                (item)->next = (head);         \
                if (head)                      \
                        (head)->prev = (item); \
                (head) = (item);               \
        } while (0)

#define LIST_REMOVE(head, item, prev, next)                \
        do {                                               \
                if ((item)->prev)                          \
                        (item)->prev->next = (item)->next; \
                else                                       \
                        (head) = (item)->next;             \
                if ((item)->next)                          \
                        (item)->next->prev = (item)->prev; \
                (item)->prev = (item)->next = NULL;        \
        } while (0)

#define QUEUE_APPEND(head, tail, item, prev, next) \
        do {                                       \
                (item)->prev = (tail);             \
                (item)->next = NULL;               \
                if (tail)                          \
                        (tail)->next = (item);     \
                else                               \
                        (head) = (item);           \
                (tail) = (item);                   \
        } while (0)

#define QUEUE_REMOVE(head, tail, item, prev, next)                          \
        do {                                                                \
                if (!(item)->next) /* the tail: the one before it is now */ \
                        (tail) = (item)->prev;                              \
                LIST_REMOVE(head, item, prev, next);                        \
        } while (0)
