/* SPDX-License-Identifier: MIT */
#include "loadgen-profile.h"

#include "macro.h"

static const char *const profile_kind_table[_PROFILE_KIND_MAX] = {
        [PROFILE_RAMP] = "ramp",
        [PROFILE_CONSTANT] = "constant",
};

const char *profile_kind_to_string(ProfileKind k) {
        return k >= 0 && k < _PROFILE_KIND_MAX ? profile_kind_table[k] : NULL;
}

ProfileKind profile_kind_from_string(const char *s) {
        for (ProfileKind k = 0; k < _PROFILE_KIND_MAX; k++)
                if (streq(s, profile_kind_table[k]))
                        return k;
        return _PROFILE_KIND_INVALID;
}

/* users × part / whole, rounded to the nearest user (in 128 bits: users × microseconds overflows 64
 * bits only past a year of duration, but nothing here should wrap). */
static unsigned scaled(unsigned users, usec_t part, usec_t whole) {
        if (whole == 0)
                return users;
        return (unsigned) (((unsigned __int128) users * part + whole / 2) / whole);
}

unsigned profile_users_at(const Profile *p, usec_t elapsed) {
        usec_t third = p->duration / 3;

        if (elapsed >= p->duration)
                return 0;
        if (p->kind == PROFILE_CONSTANT)
                return p->users;
        if (elapsed < third)
                return scaled(p->users, elapsed, third);
        if (elapsed < p->duration - third)
                return p->users;
        return scaled(p->users, p->duration - elapsed, third);
}

bool profile_linger_is_over(usec_t linger, usec_t since, usec_t now, bool have_status, unsigned workers,
                            unsigned baseline) {
        if (linger == 0 || now >= since + linger)
                return true;
        return have_status && workers <= baseline;
}

void rng_seed(Rng *r, uint64_t seed) {
        r->state = seed ? seed : 0x9e3779b97f4a7c15ULL;
}

uint64_t rng_next(Rng *r) {
        uint64_t x = r->state;

        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        r->state = x;
        return x * 0x2545f4914f6cdd1dULL;
}

uint64_t rng_below(Rng *r, uint64_t n) {
        /* the top bits are the good ones of xorshift64*; the bias for n << 2^64 is negligible here */
        return n == 0 ? 0 : (uint64_t) (((unsigned __int128) rng_next(r) * n) >> 64);
}

usec_t rng_think(Rng *r, usec_t think) {
        if (think == 0)
                return 0;
        return think / 2 + rng_below(r, think + 1);
}

usec_t rng_idle_check(Rng *r, usec_t idle_check) {
        /* the same spread: a 5 s check lands anywhere in 2.5..7.5 s, so 60 users that left within one
         * second still spread their checks over the pool's report intervals */
        return rng_think(r, idle_check);
}
