/* acl_config.c: the acl.json of aclInit.
 *
 * The file must be JSON (RFC 8259) with an object at the top; anything else is reported with
 * its file, line and column. Unknown keys are ignored; the top-level "dump" value is kept as
 * text (opbuild_acl_dump_config), which aclInit hands to the dump (acl_dump_configure). A small validating parser, so that
 * aclInit needs no Python.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"

#define MAX_CONFIG_BYTES (16u << 20)
#define MAX_DEPTH 128

typedef struct parser {
    const char *s, *end, *p;
    const char *dump_start, *dump_end;
    char err[256];
} parser;

static void position(const parser *ps, const char *at, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (const char *q = ps->s; q < at && q < ps->end; q++) {
        if (*q == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static int fail(parser *ps, const char *what) {
    if (ps->err[0] == '\0') {
        if (ps->p >= ps->end) snprintf(ps->err, sizeof ps->err, "%s, found the end of the file", what);
        else snprintf(ps->err, sizeof ps->err, "%s, found '%c'", what, *ps->p);
    }
    return -1;
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static int parse_value(parser *ps, int depth);

/* A string; its content is [*start, *end) (raw, escapes not decoded). */
static int parse_string(parser *ps, const char **start, const char **end) {
    if (ps->p >= ps->end || *ps->p != '"') return fail(ps, "expected a string");
    ps->p++;
    if (start) *start = ps->p;
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) return fail(ps, "control character in a string");
        if (c == '\\') {
            ps->p++;
            if (ps->p >= ps->end) return fail(ps, "unfinished escape");
            if (*ps->p == 'u') {
                for (int i = 0; i < 4; i++) {
                    ps->p++;
                    if (ps->p >= ps->end || !strchr("0123456789abcdefABCDEF", *ps->p) || *ps->p == '\0')
                        return fail(ps, "expected 4 hex digits after \\u");
                }
            } else if (!strchr("\"\\/bfnrt", *ps->p) || *ps->p == '\0') {
                return fail(ps, "invalid escape");
            }
        }
        ps->p++;
    }
    if (ps->p >= ps->end) return fail(ps, "unterminated string");
    if (end) *end = ps->p;
    ps->p++;
    return 0;
}

static int parse_number(parser *ps) {
    const char *q = ps->p;
    if (q < ps->end && *q == '-') q++;
    if (q >= ps->end || *q < '0' || *q > '9') {
        ps->p = q;
        return fail(ps, "expected a digit");
    }
    if (*q == '0') q++;
    else while (q < ps->end && *q >= '0' && *q <= '9') q++;
    if (q < ps->end && *q == '.') {
        q++;
        if (q >= ps->end || *q < '0' || *q > '9') {
            ps->p = q;
            return fail(ps, "expected a digit after '.'");
        }
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < ps->end && (*q == '+' || *q == '-')) q++;
        if (q >= ps->end || *q < '0' || *q > '9') {
            ps->p = q;
            return fail(ps, "expected a digit in the exponent");
        }
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
    }
    ps->p = q;
    return 0;
}

static int parse_word(parser *ps, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return fail(ps, "expected a JSON value");
    ps->p += n;
    return 0;
}

static int parse_object(parser *ps, int depth) {
    ps->p++; /* { */
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return 0;
    }
    for (;;) {
        skip_ws(ps);
        const char *ks, *ke;
        if (parse_string(ps, &ks, &ke)) return -1;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') return fail(ps, "expected ':' after an object key");
        ps->p++;
        skip_ws(ps);
        const char *vs = ps->p;
        if (parse_value(ps, depth + 1)) return -1;
        if (depth == 1 && ke - ks == 4 && memcmp(ks, "dump", 4) == 0) {
            ps->dump_start = vs;
            ps->dump_end = ps->p;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return 0;
        }
        return fail(ps, "expected ',' or '}' in an object");
    }
}

static int parse_array(parser *ps, int depth) {
    ps->p++; /* [ */
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return 0;
    }
    for (;;) {
        skip_ws(ps);
        if (parse_value(ps, depth + 1)) return -1;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return 0;
        }
        return fail(ps, "expected ',' or ']' in an array");
    }
}

static int parse_value(parser *ps, int depth) {
    if (depth > MAX_DEPTH) return fail(ps, "nested too deeply");
    skip_ws(ps);
    if (ps->p >= ps->end) return fail(ps, "expected a JSON value");
    switch (*ps->p) {
    case '{': return parse_object(ps, depth);
    case '[': return parse_array(ps, depth);
    case '"': return parse_string(ps, NULL, NULL);
    case 't': return parse_word(ps, "true");
    case 'f': return parse_word(ps, "false");
    case 'n': return parse_word(ps, "null");
    default: return parse_number(ps);
    }
}

static pthread_mutex_t g_config_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_dump; /* the "dump" value of the last acl.json read, or NULL */

aclError acl_read_config(const char *path) {
    if (path == NULL || *path == '\0') return ACL_SUCCESS;
    FILE *f = fopen(path, "rb");
    if (f == NULL) return acl_fail(ACL_ERROR_INVALID_FILE, "aclInit: the config file %s cannot be read", path);
    char *text = malloc(MAX_CONFIG_BYTES + 1);
    if (text == NULL) {
        fclose(f);
        return acl_fail(ACL_ERROR_BAD_ALLOC, "aclInit: out of memory");
    }
    size_t n = fread(text, 1, MAX_CONFIG_BYTES + 1, f);
    int bad_read = ferror(f);
    fclose(f);
    if (bad_read || n > MAX_CONFIG_BYTES) {
        free(text);
        return acl_fail(bad_read ? ACL_ERROR_INVALID_FILE : ACL_ERROR_INVALID_FILE_SIZE, "aclInit: %s: %s", path,
                        bad_read ? "read error" : "larger than 16 MiB");
    }
    parser ps = {.s = text, .end = text + n, .p = text};
    if (n >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) ps.p += 3; /* a UTF-8 byte order mark */
    skip_ws(&ps);
    int rc;
    if (ps.p < ps.end && *ps.p != '{') rc = fail(&ps, "expected a JSON object at the top");
    else rc = parse_value(&ps, 1);
    if (rc == 0) {
        skip_ws(&ps);
        if (ps.p < ps.end) rc = fail(&ps, "expected the end of the file after the top-level object");
    }
    if (rc != 0) {
        int line, col;
        position(&ps, ps.p, &line, &col);
        aclError st = acl_fail(ACL_ERROR_PARSE_FILE, "aclInit: %s:%d:%d: invalid JSON: %s", path, line, col, ps.err);
        free(text);
        return st;
    }
    char *dump = NULL;
    if (ps.dump_start != NULL) {
        size_t len = (size_t)(ps.dump_end - ps.dump_start);
        dump = malloc(len + 1);
        if (dump != NULL) {
            memcpy(dump, ps.dump_start, len);
            dump[len] = '\0';
        }
    }
    free(text);
    pthread_mutex_lock(&g_config_lock);
    free(g_dump);
    g_dump = dump;
    pthread_mutex_unlock(&g_config_lock);
    return ACL_SUCCESS;
}

const char *opbuild_acl_dump_config(void) {
    pthread_mutex_lock(&g_config_lock);
    const char *d = g_dump;
    pthread_mutex_unlock(&g_config_lock);
    return d;
}
