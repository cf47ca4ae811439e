/* SPDX-License-Identifier: MIT */
#include "loadgen-heap.h"

#include <errno.h>
#include <stdlib.h>

int timer_heap_init(TimerHeap *h, size_t capacity) {
        *h = (TimerHeap){.capacity = capacity};
        h->nodes = calloc(capacity > 0 ? capacity : 1, sizeof *h->nodes);
        return h->nodes ? 0 : -ENOMEM;
}

void timer_heap_done(TimerHeap *h) {
        free(h->nodes);
        *h = (TimerHeap){};
}

static void place(TimerHeap *h, size_t i, TimerNode *t) {
        h->nodes[i] = t;
        t->idx = i;
}

static void sift_up(TimerHeap *h, size_t i) {
        TimerNode *t = h->nodes[i];

        while (i > 0) {
                size_t parent = (i - 1) / 2;
                if (h->nodes[parent]->when <= t->when)
                        break;
                place(h, i, h->nodes[parent]);
                i = parent;
        }
        place(h, i, t);
}

static void sift_down(TimerHeap *h, size_t i) {
        TimerNode *t = h->nodes[i];

        for (;;) {
                size_t child = 2 * i + 1;
                if (child >= h->n)
                        break;
                if (child + 1 < h->n && h->nodes[child + 1]->when < h->nodes[child]->when)
                        child++;
                if (t->when <= h->nodes[child]->when)
                        break;
                place(h, i, h->nodes[child]);
                i = child;
        }
        place(h, i, t);
}

int timer_heap_schedule(TimerHeap *h, TimerNode *t, usec_t when) {
        if (timer_node_scheduled(t)) {
                usec_t old = t->when;

                t->when = when;
                if (when < old)
                        sift_up(h, t->idx);
                else
                        sift_down(h, t->idx);
                return 0;
        }
        if (h->n >= h->capacity)
                return -ENOSPC;
        t->when = when;
        place(h, h->n++, t);
        sift_up(h, t->idx);
        return 0;
}

void timer_heap_cancel(TimerHeap *h, TimerNode *t) {
        size_t i = t->idx;
        TimerNode *moved;

        if (!timer_node_scheduled(t))
                return;
        t->idx = TIMER_IDX_NONE;
        if (--h->n == i)
                return;
        /* the last node takes the hole and goes whichever way its deadline says */
        moved = h->nodes[h->n];
        place(h, i, moved);
        sift_up(h, i);
        sift_down(h, moved->idx);
}

TimerNode *timer_heap_peek(const TimerHeap *h) {
        return h->n > 0 ? h->nodes[0] : NULL;
}
