/* SPDX-License-Identifier: MIT */
#pragma once

/* Out of file descriptors, accept() fails at once with EMFILE or ENFILE, and a level-triggered listener
 * would be retried in a busy loop. Every accept loop of the commander (the front end's listeners,
 * channel.sock, the admin listener) pauses instead: its listener is off for ACCEPT_PAUSE, what is open is
 * served meanwhile, connections wait in the kernel's queue; the shortage is said once per episode, and
 * its end once (the first accept that finds room again). */

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "time-util.h"

#define ACCEPT_PAUSE (250 * USEC_PER_MSEC)

typedef struct AcceptPause {
        const char *what; /* the listener, for the journal: "channel.sock", "the admin listener" */
        /* turns the listener off (false) while paused, and on again (true) */
        void (*set_accepting)(void *userdata, bool on);
        void *userdata;

        sd_event_source *timer;
        bool paused;
        bool told;       /* the episode was said; an accept with room again ends it */
        unsigned pauses; /* in the current episode */
} AcceptPause;

/* Makes the timer now, disabled: out of descriptors, sd-event could not make the timerfd behind it. 0 or
 * -errno. */
int accept_pause_init(AcceptPause *a, sd_event *event, const char *what,
                      void (*set_accepting)(void *userdata, bool on), void *userdata);
void accept_pause_done(AcceptPause *a);

/* The errno of a failed accept() says that descriptors ran out. */
bool accept_error_is_shortage(int error);
/* Which limit it hit, for the journal: "the process limit, ..." (EMFILE) or "the system's limit, ...". */
const char *accept_shortage_why(int error);

/* Stops accepting for ACCEPT_PAUSE, why said (with detail, may be NULL) when the episode begins. */
void accept_pause_begin(AcceptPause *a, const char *why, const char *detail);
/* An accept found room: the episode, if any, is over (said once). */
void accept_pause_end_episode(AcceptPause *a);
