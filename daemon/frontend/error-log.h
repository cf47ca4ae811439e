/* SPDX-License-Identifier: MIT */
#pragma once

/* The rate limit of the front end's error lines (request errors and client-caused ones): a flood, or an
 * overloaded pool answering 503 to everyone, must not become a journal flood. Lines left out are counted
 * by status and reported when their second is over, by a timer, so the count goes out even when nothing
 * follows. */

#include <stddef.h>

#include "exchange.h"

/* Error lines per second; the rest are counted and summed up. */
#define ERROR_LINES_PER_SECOND 20U
/* Suppressed error lines are counted per status 400..599, plus one count for those without a status. */
#define FRONTEND_LOG_STATUSES 201

/* Arms the flush timer (off until a line is left out). 0 or -errno. */
int error_log_init(Frontend *fe);
/* Reports what is still counted, then drops the timer. */
void error_log_done(Frontend *fe);

/* A client-caused error worth a line, rate-limited across the front end. */
void frontend_log_client_error(Frontend *fe, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* A line about request x through the same rate limit: its error response (status 400..599) or, with
 * status 0, something the client did wrong in it. The message must name x->id; the entry also carries
 * EP_REQUEST_ID (and EP_STATUS), EP_WORKER and EP_USER. Lines left out are counted by status and reported
 * ("... and 180 more 503s in the last second") when the second ends. */
void frontend_log_request(Frontend *fe, const Exchange *x, unsigned status, const char *format, ...)
        __attribute__((format(printf, 4, 5)));

/* The EP_REQUEST_ID=/EP_STATUS= journal fields of x (LogFields.extra), written into buf (at least
 * REQUEST_LOG_FIELDS_MAX bytes); status 0 leaves EP_STATUS out. Returns buf. */
#define REQUEST_LOG_FIELDS_MAX 80
const char *request_log_fields(char *buf, size_t size, const Exchange *x, unsigned status);

/* Reports the error lines the rate limit left out so far, if any (the timer does it when the second
 * ends; exposed for shutdown and tests). */
void frontend_log_flush(Frontend *fe);
