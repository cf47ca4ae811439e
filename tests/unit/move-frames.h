/* SPDX-License-Identifier: MIT */
#pragma once

/* A worker's answers to a move, as the tests hand them to the commander: a Package of blob (NULL: none,
 * with error) and an InstallResult. The caller's storage holds the message; the Frame points into it. */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "frame.h"

static inline void move_frame_package(Frame *f, ElasticPool__Package *p, uint64_t move_id, const char *blob,
                                      const char *error) {
        *p = (ElasticPool__Package) ELASTIC_POOL__PACKAGE__INIT;
        *f = (Frame) ELASTIC_POOL__FRAME__INIT;
        p->has_move_id = true, p->move_id = move_id;
        if (blob)
                p->has_blob = true, p->blob = (ProtobufCBinaryData) { strlen(blob), (uint8_t *) blob };
        p->error = (char *) error;
        f->body_case = ELASTIC_POOL__FRAME__BODY_PACKAGE, f->package = p;
}

/* The sensor's answer for a user its application does not know (snapshot -ENOENT). */
static inline void move_frame_package_unknown(Frame *f, ElasticPool__Package *p, uint64_t move_id) {
        move_frame_package(f, p, move_id, NULL, "user is not known to this worker");
        p->has_unknown_user = p->unknown_user = true;
}

static inline void move_frame_install_result(Frame *f, ElasticPool__InstallResult *r, uint64_t move_id, bool ok,
                                             const char *error) {
        *r = (ElasticPool__InstallResult) ELASTIC_POOL__INSTALL_RESULT__INIT;
        *f = (Frame) ELASTIC_POOL__FRAME__INIT;
        r->has_move_id = true, r->move_id = move_id;
        r->has_ok = true, r->ok = ok;
        r->error = (char *) error;
        f->body_case = ELASTIC_POOL__FRAME__BODY_INSTALL_RESULT, f->install_result = r;
}
