/* SPDX-License-Identifier: MIT */
#include "accept-pause.h"

#include <errno.h>

#include "log.h"

void accept_pause_done(AcceptPause *a) {
        a->timer = sd_event_source_disable_unref(a->timer);
        a->paused = false;
}

bool accept_error_is_shortage(int error) {
        error = error < 0 ? -error : error;
        return error == EMFILE || error == ENFILE;
}

const char *accept_shortage_why(int error) {
        error = error < 0 ? -error : error;
        return error == EMFILE ? "the process limit, raise LimitNOFILE=" : "the system's limit, fs.file-max";
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        AcceptPause *a = userdata;

        a->paused = false;
        a->set_accepting(a->userdata, true);
        return 0;
}

int accept_pause_init(AcceptPause *a, sd_event *event, const char *what,
                      void (*set_accepting)(void *userdata, bool on), void *userdata) {
        int r;

        *a = (AcceptPause) { .what = what, .set_accepting = set_accepting, .userdata = userdata };
        r = sd_event_add_time(event, &a->timer, CLOCK_MONOTONIC, 0, 10 * USEC_PER_MSEC, on_timer, a);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(a->timer, SD_EVENT_OFF);
}

void accept_pause_begin(AcceptPause *a, const char *why, const char *detail) {
        int r;

        if (a->paused)
                return;
        r = sd_event_source_set_time_relative(a->timer, ACCEPT_PAUSE);
        if (r >= 0)
                r = sd_event_source_set_enabled(a->timer, SD_EVENT_ONESHOT);
        if (r < 0) {
                /* no way back from a pause without its timer: then no pause */
                log_warning_errno(r, "Failed to arm the accept pause timer of %s, accepting on: %m",
                                  a->what);
                return;
        }
        a->paused = true;
        a->pauses++;
        a->set_accepting(a->userdata, false);
        if (a->told)
                return;
        a->told = true;
        log_warning("Out of file descriptors (%s%s%s) on %s: accepting paused, retried every %llu ms; open "
                    "connections are served meanwhile",
                    why, detail ? ", " : "", detail ?: "", a->what,
                    (unsigned long long) (ACCEPT_PAUSE / USEC_PER_MSEC));
}

void accept_pause_end_episode(AcceptPause *a) {
        if (!a->told)
                return;
        log_info("Accepting again after %u pauses for lack of file descriptors (%s)", a->pauses, a->what);
        a->told = false;
        a->pauses = 0;
}
