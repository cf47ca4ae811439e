/* SPDX-License-Identifier: MIT */
#pragma once

/* An intrusive binary min-heap of deadlines: each virtual user embeds one TimerNode (its next think
 * end or request timeout), so scheduling, moving and cancelling never allocate. The loop sleeps until
 * the earliest node. */

#include <stdbool.h>
#include <stddef.h>

#include "time-util.h"

#define TIMER_IDX_NONE ((size_t) -1)

typedef struct TimerNode {
        usec_t when;
        size_t idx; /* position in the heap, TIMER_IDX_NONE when not scheduled */
} TimerNode;

typedef struct TimerHeap {
        TimerNode **nodes;
        size_t n, capacity;
} TimerHeap;

static inline void timer_node_init(TimerNode *t) {
        *t = (TimerNode){.idx = TIMER_IDX_NONE};
}

static inline bool timer_node_scheduled(const TimerNode *t) {
        return t->idx != TIMER_IDX_NONE;
}

/* Reserves room for `capacity` nodes at once; 0 or -ENOMEM. */
int timer_heap_init(TimerHeap *h, size_t capacity);
void timer_heap_done(TimerHeap *h);

/* Schedules t at `when`, or moves it there when already scheduled. -ENOSPC past the capacity. */
int timer_heap_schedule(TimerHeap *h, TimerNode *t, usec_t when);
void timer_heap_cancel(TimerHeap *h, TimerNode *t);
/* The earliest node, or NULL. */
TimerNode *timer_heap_peek(const TimerHeap *h);
