/* SPDX-License-Identifier: MIT */
#include "drift.h"

static const char *const register_table[_DRIFT_REGISTER_MAX] = {
        [DRIFT_USERS] = "users",
        [DRIFT_CONNECTIONS] = "connections",
};

const char *drift_register_to_string(DriftRegister r) {
        return r >= 0 && r < _DRIFT_REGISTER_MAX ? register_table[r] : NULL;
}

/* One register: true when its drift became sustained with this report; *ended when a sustained one
 * agrees again. */
static bool observe_one(DriftState *s, bool known, uint32_t reported, uint32_t expected, unsigned sustain,
                        usec_t now, bool *ended) {
        *ended = false;
        if (!known)
                return false; /* an unknown side neither starts nor ends a drift */
        if (reported == expected) {
                *ended = s->sustained;
                *s = (DriftState) {};
                return false;
        }
        if (s->streak == 0)
                s->since = now;
        s->streak++;
        s->reported = reported;
        s->expected = expected;
        if (s->sustained || s->streak < sustain)
                return false;
        s->sustained = true;
        return true;
}

unsigned drift_observe(DriftSentinel *d, const DriftInput *in, unsigned sustain, usec_t now, unsigned *ret_ended) {
        unsigned began = 0, ended_mask = 0;

        if (sustain == 0)
                sustain = 1;
        for (DriftRegister r = 0; r < _DRIFT_REGISTER_MAX; r++) {
                bool ended;

                if (observe_one(&d->state[r], in->has_reported[r] && in->has_expected[r], in->reported[r],
                                in->expected[r], sustain, now, &ended))
                        began |= 1U << r;
                if (ended)
                        ended_mask |= 1U << r;
        }
        if (ret_ended)
                *ret_ended = ended_mask;
        return began;
}

bool drift_any(const DriftSentinel *d) {
        for (DriftRegister r = 0; r < _DRIFT_REGISTER_MAX; r++)
                if (d->state[r].sustained)
                        return true;
        return false;
}
