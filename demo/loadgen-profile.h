/* SPDX-License-Identifier: MIT */
#pragma once

/* The load profile: how many virtual users should be logged in at a given moment of the run, the
 * random choices each one makes (which request next, how long to think, when an idle session checks
 * again), and when lingering after the load is over. Pure functions. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "time-util.h"

typedef enum ProfileKind {
        PROFILE_RAMP,     /* 0 -> users over the first third, hold, back to 0 over the last third */
        PROFILE_CONSTANT, /* users from the start to the end */
        _PROFILE_KIND_MAX,
        _PROFILE_KIND_INVALID = -EINVAL,
} ProfileKind;

typedef struct Profile {
        ProfileKind kind;
        unsigned users;
        usec_t duration;
} Profile;

const char *profile_kind_to_string(ProfileKind k);
ProfileKind profile_kind_from_string(const char *s);

/* Users that should be live `elapsed` into the run: 0 at and after the end. */
unsigned profile_users_at(const Profile *p, usec_t elapsed);

/* Whether lingering after the load (--linger, counted from `since`) is over at `now`: none was asked
 * for, its time is up, or the pool is back to its size at the start (workers <= baseline; known only
 * with a status read, have_status). */
bool profile_linger_is_over(usec_t linger, usec_t since, usec_t now, bool have_status, unsigned workers,
                            unsigned baseline);

/* xorshift64*: fast, good enough for spreading think times; never seeded with 0. */
typedef struct Rng {
        uint64_t state;
} Rng;

void rng_seed(Rng *r, uint64_t seed);
uint64_t rng_next(Rng *r);
/* Uniform in [0, n); 0 when n is 0. */
uint64_t rng_below(Rng *r, uint64_t n);

/* A think time spread uniformly over [think/2, 3*think/2], so users do not march in lockstep. */
usec_t rng_think(Rng *r, usec_t think);
/* The pause before an idle session's next /state (its first one too, counted from when it went idle):
 * --idle-check spread like a think time, so users that left together do not check together. */
usec_t rng_idle_check(Rng *r, usec_t idle_check);
