/* setting.h: the C reader of opbuild's `int` settings (opbuild/env_vars.py, type "int").
 *
 * OPBUILD_INT_SETTING(OPBUILD_PARAM_CACHE_SIZE) is the variable's value when it is an integer in
 * [_MIN, _MAX] of opbuild/vocabulary_gen.h (optional blanks and sign, then decimal digits, then
 * optional blanks), else its _DEFAULT with a warning on stderr naming the variable and the value:
 * the rule and the words of env_vars.int_setting, so a C program and the Python runtime agree.
 * Call it once per process (the acl library reads OPBUILD_PARAM_CACHE_SIZE under pthread_once).
 */
#ifndef OPBUILD_SETTING_H
#define OPBUILD_SETTING_H

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "opbuild/vocabulary_gen.h"

static inline long opbuild_int_setting(const char *name, long dflt, long min, long max) {
    const char *text = getenv(name);
    if (text == NULL || *text == '\0') return dflt;
    char *end = NULL;
    errno = 0;
    long value = strtol(text, &end, 10);
    int ok = end != text && errno == 0;
    if (ok)
        while (isspace((unsigned char)*end)) end++;
    if (ok && *end == '\0' && value >= min && value <= max) return value;
    fprintf(stderr, "opbuild: warning: %s='%s' is not an integer in %ld..%ld; using the default %ld\n", name, text,
            min, max, dflt);
    return dflt;
}

#define OPBUILD_INT_SETTING(NAME) opbuild_int_setting(#NAME, NAME##_DEFAULT, NAME##_MIN, NAME##_MAX)

#endif /* OPBUILD_SETTING_H */
