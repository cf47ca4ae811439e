/* SPDX-License-Identifier: MIT */
#pragma once

/* The monitor's page (/_commander/monitor): one self-contained HTML document, its style and its script
 * inline, no external asset of any kind (no CDN, no font, no image), for an operator's browser on a host
 * with no way out. The script polls /_commander/monitor.json and /_commander/population (relative URLs:
 * the page talks to the listener it came from, and nothing else) and builds every element with
 * textContent, never markup: user names and worker fields come from workers.
 *
 * It is served with a Content-Security-Policy that lets the browser enforce the same: no source but the
 * page's own inline style and script (by their SHA-256), fetches only to its own origin. */

#include <stddef.h>

typedef struct MonitorPage {
        char *html;
        size_t html_len;
        char *csp; /* the Content-Security-Policy header's value */
} MonitorPage;

/* Builds the page and its policy (the hashes of its inline style and script). 0 or -ENOMEM. */
int monitor_page_init(MonitorPage *p);
void monitor_page_done(MonitorPage *p);
