/* SPDX-License-Identifier: MIT */
#include "monitor-page.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "macro.h"

/* daemon/monitor-page.{html,css,js}, embedded at build time (daemon/embed.cmake) */
extern const char monitor_page_html_text[], monitor_page_css_text[], monitor_page_js_text[];
extern const size_t monitor_page_html_text_len, monitor_page_css_text_len, monitor_page_js_text_len;

#define STYLE_MARK "<!--style-->"
#define SCRIPT_MARK "<!--script-->"

/* 'sha256-BASE64' of text, as CSP names an inline element (the exact bytes between its tags). */
static int csp_hash(const char *text, size_t len, char ret[static 64]) {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned n = 0;
        char b64[48];

        if (EVP_Digest(text, len, digest, &n, EVP_sha256(), NULL) != 1 || n != 32)
                return -EIO;
        if (EVP_EncodeBlock((unsigned char *) b64, digest, (int) n) != 44)
                return -EIO;
        snprintf(ret, 64, "'sha256-%s'", b64);
        return 0;
}

/* The skeleton with its two marks replaced by the inline style and script. */
static char *assemble(size_t *ret_len) {
        const char *html = monitor_page_html_text, *style = strstr(html, STYLE_MARK), *script;
        _cleanup_free_ char *out = NULL;
        size_t size = 0;
        FILE *f;

        script = style ? strstr(style, SCRIPT_MARK) : NULL;
        if (!script)
                return NULL; /* the marks are in the file we ship: a broken build */
        f = open_memstream(&out, &size);
        if (!f)
                return NULL;
        fwrite(html, 1, (size_t) (style - html), f);
        fputs("<style>", f);
        fwrite(monitor_page_css_text, 1, monitor_page_css_text_len, f);
        fputs("</style>", f);
        style += strlen(STYLE_MARK);
        fwrite(style, 1, (size_t) (script - style), f);
        fputs("<script>", f);
        fwrite(monitor_page_js_text, 1, monitor_page_js_text_len, f);
        fputs("</script>", f);
        script += strlen(SCRIPT_MARK);
        fputs(script, f);
        if (fclose(f) != 0)
                return NULL;
        *ret_len = size;
        return TAKE_PTR(out);
}

int monitor_page_init(MonitorPage *p) {
        char style[64], script[64];
        int r;

        *p = (MonitorPage) {};
        r = csp_hash(monitor_page_css_text, monitor_page_css_text_len, style);
        if (r < 0)
                return r;
        r = csp_hash(monitor_page_js_text, monitor_page_js_text_len, script);
        if (r < 0)
                return r;
        /* default-src 'none' covers everything not named: no image, font, frame, worker, media, object */
        if (asprintf(&p->csp,
                     "default-src 'none'; style-src %s; script-src %s; connect-src 'self'; img-src 'self'; "
                     "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
                     style, script) < 0) {
                p->csp = NULL;
                return -ENOMEM;
        }
        p->html = assemble(&p->html_len);
        if (!p->html) {
                monitor_page_done(p);
                return -ENOMEM;
        }
        return 0;
}

void monitor_page_done(MonitorPage *p) {
        p->html = mfree(p->html);
        p->csp = mfree(p->csp);
        p->html_len = 0;
}
