/* SPDX-License-Identifier: MIT */
#include "json-write.h"

#include <math.h>

void json_write_string(FILE *f, const char *s) {
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *) (s ? s : ""); *p; p++) {
                if (*p == '"' || *p == '\\')
                        fprintf(f, "\\%c", *p);
                else if (*p < 0x20)
                        fprintf(f, "\\u%04x", *p);
                else
                        fputc(*p, f);
        }
        fputc('"', f);
}

void json_write_number_or_null(FILE *f, bool has, double v) {
        if (has && isfinite(v))
                fprintf(f, "%.4f", v);
        else
                fputs("null", f);
}
