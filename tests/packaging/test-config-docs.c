/* SPDX-License-Identifier: MIT */
/* elastic-pool.conf(5) and the configuration parser name the same keys, each in the same section: every
 * key the page documents exists in the parser (unit/config checks the other way round on the Markdown
 * source), and the man page as built and shipped documents every key of the parser and no other.
 * The parser is asked through config_key_name()/config_key_section() only, so its KEY table can change
 * freely: this test follows it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "config.h"
#include "macro.h"

#ifndef EP_SOURCE_DIR
#error "EP_SOURCE_DIR must name the source tree"
#endif
#ifndef EP_CONF_MAN_PAGE
#error "EP_CONF_MAN_PAGE must name the built elastic-pool.conf.5 (or be empty without man pages)"
#endif

#define DOC_MD EP_SOURCE_DIR "/docs/elastic-pool.conf.5.md"

/* A key as a document names it, under the section it names. */
typedef struct DocKey {
        char section[64];
        char name[64];
        unsigned line;
} DocKey;

#define DOC_KEYS_MAX 256

/* The whole file (NUL-terminated, malloc()ed), or NULL with errno set. */
static char *read_file(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char *text = NULL;
        size_t size = 0;

        if (!f)
                return NULL;
        if (getdelim(&text, &size, 0, f) < 0) {
                free(text);
                return NULL;
        }
        return text;
}

/* Copies what lies between prefix and suffix of line into buf; false when the line is not so framed. */
static bool between(const char *line, size_t length, const char *prefix, const char *suffix, char *buf,
                    size_t size) {
        size_t p = strlen(prefix), s = strlen(suffix);

        if (length < p + s || strncmp(line, prefix, p) != 0 || strncmp(line + length - s, suffix, s) != 0)
                return false;
        if (length - p - s >= size)
                return false;
        memcpy(buf, line + p, length - p - s);
        buf[length - p - s] = 0;
        return true;
}

/* The Markdown source: "# [section]" opens a section, "### `key=`" is a key; fenced code is skipped. */
static size_t md_keys(const char *text, DocKey *keys) {
        char section[64] = "";
        bool fenced = false;
        size_t n = 0;
        unsigned line_no = 0;

        for (const char *line = text; *line;) {
                size_t l = strcspn(line, "\n");
                char buf[64];

                line_no++;
                if (strncmp(line, "```", 3) == 0)
                        fenced = !fenced;
                else if (!fenced && between(line, l, "# [", "]", buf, sizeof buf))
                        snprintf(section, sizeof section, "%s", buf);
                else if (!fenced && strncmp(line, "# ", 2) == 0)
                        section[0] = 0;
                else if (!fenced && between(line, l, "### `", "=`", buf, sizeof buf)) {
                        assert_true(n < DOC_KEYS_MAX);
                        keys[n] = (DocKey){.line = line_no};
                        snprintf(keys[n].section, sizeof keys[n].section, "%s",
                                 section[0] ? section : "none");
                        snprintf(keys[n].name, sizeof keys[n].name, "%s", buf);
                        n++;
                }
                line += l + (line[l] == '\n');
        }
        return n;
}

/* The roff that pandoc makes of it: ".SH [section]", ".SS \f[V]key=\f[R]". Font changes and "\-" are
 * undone before matching. */
static size_t man_keys(const char *text, DocKey *keys) {
        char section[64] = "";
        size_t n = 0;
        unsigned line_no = 0;

        for (const char *line = text; *line;) {
                size_t l = strcspn(line, "\n");
                char plain[256], buf[64];
                size_t o = 0;

                line_no++;
                for (size_t i = 0; i < l && o + 1 < sizeof plain; i++) {
                        if (line[i] == '\\' && i + 1 < l && line[i + 1] == 'f') {
                                /* \fX or \f[XX] */
                                i += 2;
                                if (i < l && line[i] == '[')
                                        while (i < l && line[i] != ']')
                                                i++;
                                continue;
                        }
                        if (line[i] == '\\' && i + 1 < l && line[i + 1] == '-')
                                i++;
                        plain[o++] = line[i];
                }
                plain[o] = 0;

                if (between(plain, o, ".SH [", "]", buf, sizeof buf))
                        snprintf(section, sizeof section, "%s", buf);
                else if (strncmp(plain, ".SH", 3) == 0)
                        section[0] = 0;
                else if (section[0] && between(plain, o, ".SS ", "=", buf, sizeof buf)) {
                        /* a key heading outside a [section] is not a key: other pages' .SS are prose */
                        assert_true(n < DOC_KEYS_MAX);
                        keys[n] = (DocKey){.line = line_no};
                        snprintf(keys[n].section, sizeof keys[n].section, "%s", section);
                        snprintf(keys[n].name, sizeof keys[n].name, "%s", buf);
                        n++;
                }
                line += l + (line[l] == '\n');
        }
        return n;
}

/* The parser's key of that name, or _CONFIG_KEY_INVALID. */
static ConfigKey parser_key(const char *name) {
        for (ConfigKey k = 0; k < _CONFIG_KEY_MAX; k++)
                if (strcmp(config_key_name(k), name) == 0)
                        return k;
        return _CONFIG_KEY_INVALID;
}

/* Every documented key is the parser's, in the section the parser puts it; names every miss. */
static unsigned check_documented_keys_exist(const char *doc, const DocKey *keys, size_t n) {
        unsigned misses = 0;

        for (size_t i = 0; i < n; i++) {
                ConfigKey k = parser_key(keys[i].name);
                if (k < 0) {
                        print_error("%s:%u: [%s] %s= is documented, but the parser knows no such key\n", doc,
                                    keys[i].line, keys[i].section, keys[i].name);
                        misses++;
                } else if (strcmp(config_key_section(k), keys[i].section) != 0) {
                        print_error("%s:%u: %s= is documented under [%s], but the parser reads it in [%s]\n",
                                    doc, keys[i].line, keys[i].name, keys[i].section, config_key_section(k));
                        misses++;
                }
        }
        return misses;
}

static void test_config_docs_md_keys_exist_in_parser(void **state) {
        _cleanup_free_ char *text = read_file(DOC_MD);
        DocKey keys[DOC_KEYS_MAX];
        size_t n;

        assert_non_null(text);
        n = md_keys(text, keys);
        /* the page's shape is what this test reads: finding nothing means the shape changed */
        assert_true(n > 0);
        assert_int_equal(check_documented_keys_exist(DOC_MD, keys, n), 0);
}

static void test_config_docs_man_page_names_every_key_and_no_other(void **state) {
        _cleanup_free_ char *text = NULL;
        DocKey keys[DOC_KEYS_MAX];
        unsigned misses;
        size_t n;

        if (strlen(EP_CONF_MAN_PAGE) == 0) {
                print_message("SKIP: built without man pages (EP_BUILD_MAN=OFF)\n");
                skip();
        }
        text = read_file(EP_CONF_MAN_PAGE);
        if (!text && errno == ENOENT) {
                print_message("SKIP: %s is not built yet (cmake --build builds it)\n", EP_CONF_MAN_PAGE);
                skip();
        }
        assert_non_null(text);
        n = man_keys(text, keys);
        assert_true(n > 0);
        misses = check_documented_keys_exist(EP_CONF_MAN_PAGE, keys, n);
        for (ConfigKey k = 0; k < _CONFIG_KEY_MAX; k++) {
                unsigned seen = 0;
                for (size_t i = 0; i < n; i++)
                        seen += strcmp(keys[i].name, config_key_name(k)) == 0;
                if (seen != 1) {
                        print_error("%s: [%s] %s= is documented %u times (once expected)\n",
                                    EP_CONF_MAN_PAGE, config_key_section(k), config_key_name(k), seen);
                        misses++;
                }
        }
        assert_int_equal(misses, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config_docs_md_keys_exist_in_parser),
                cmocka_unit_test(test_config_docs_man_page_names_every_key_and_no_other),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
