/* SPDX-License-Identifier: MIT */
#pragma once

/* What the fuzz targets share: the options byte that leads every input, writing the rest to a socket in
 * pieces, and running a loop until it has nothing left to do. Each target keeps its own harness; these
 * are the few lines all the socket-fed ones would otherwise repeat. */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <systemd/sd-event.h>

/* libFuzzer's entry points, which every target defines. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The one scratch file a target may have (a configuration file, a worker socket), in a fresh directory
 * under /tmp that goes when the fuzzer exits: libFuzzer ends its runs with exit(), and the CTest runs
 * of every build would otherwise leave a directory behind each time. A crash leaves it, beside the
 * artifact that reproduces it. */
static char fuzz_scratch_dir[64], fuzz_scratch_file[128];

static inline void fuzz_scratch_remove(void) {
        (void) unlink(fuzz_scratch_file);
        (void) rmdir(fuzz_scratch_dir);
}

/* Makes /tmp/ep-fuzz-<target>.XXXXXX and returns the path of name inside it; aborts on failure. */
static inline const char *fuzz_scratch_path(const char *target, const char *name) {
        if (snprintf(fuzz_scratch_dir, sizeof fuzz_scratch_dir, "/tmp/ep-fuzz-%s.XXXXXX", target) >=
            (int) sizeof fuzz_scratch_dir || !mkdtemp(fuzz_scratch_dir))
                abort();
        if (snprintf(fuzz_scratch_file, sizeof fuzz_scratch_file, "%s/%s", fuzz_scratch_dir, name) >=
            (int) sizeof fuzz_scratch_file || atexit(fuzz_scratch_remove) != 0)
                abort();
        return fuzz_scratch_file;
}

/* Piece sizes the options byte picks from (its low three bits): one write of everything, single bytes,
 * and sizes that split heads, frame headers and chunk lines in different places. */
static const size_t fuzz_piece_sizes[8] = { SIZE_MAX, 1, 2, 3, 7, 16, 61, 509 };

static inline size_t fuzz_piece_size(uint8_t options) {
        return fuzz_piece_sizes[options & 7];
}

/* Runs e until a pass dispatches nothing (bounded: a harness bug must not hang the fuzzer), calling
 * step(userdata) after every pass so the harness can answer what the pass produced. */
static inline void fuzz_loop_settle(sd_event *e, void (*step)(void *userdata), void *userdata) {
        for (unsigned pass = 0, idle = 0; pass < 4096 && idle < 2; pass++) {
                int r = sd_event_run(e, 0);

                if (step)
                        step(userdata);
                idle = r > 0 ? 0 : idle + 1;
        }
}

/* Reads and throws away what the peer wrote, so that its writes never block. */
static inline void fuzz_drain(int fd) {
        char buf[65536];

        while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
                ;
}

/* Writes what the socket takes now; returns how much (0 when it is full or the peer is gone). */
static inline size_t fuzz_send(int fd, const uint8_t *p, size_t n) {
        size_t done = 0;

        while (done < n) {
                ssize_t k = send(fd, p + done, n - done, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (k <= 0)
                        break;
                done += (size_t) k;
        }
        return done;
}

/* Sends data in pieces of piece bytes, letting e settle (and step answer) after each, so parsers meet
 * every split; a piece the peer does not take within a few settles is dropped with the rest, as a peer
 * that stopped reading would see it. fd's read side is drained as it goes. */
static inline void fuzz_feed(sd_event *e, int fd, const uint8_t *data, size_t size, size_t piece,
                             void (*step)(void *userdata), void *userdata) {
        while (size > 0) {
                size_t n = size < piece ? size : piece, sent = 0;

                for (unsigned tries = 0; sent < n && tries < 4; tries++) {
                        sent += fuzz_send(fd, data + sent, n - sent);
                        fuzz_loop_settle(e, step, userdata);
                        fuzz_drain(fd);
                }
                if (sent < n)
                        return;
                data += n;
                size -= n;
        }
}
