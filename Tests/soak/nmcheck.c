/*
 * nmcheck: Jepsen-style no-missed-change checker for Nimbus `records/changes` (issue 7, item 4).
 * Compiled at run time with the C compiler of the Swift toolchain (cc or clang); needs nothing else
 * (its HTTP client is bench/httpclient.h, included by relative path).
 *
 *   nmcheck -p PORT[,PORT...] -d DBPATH -t TOKENS [-h HOST] [-z ZONE] [-w WRITERS] [-r READERS] [-s SECONDS]
 *           [-W WAIT] [-S SHARED] [-U]
 *
 *   DBPATH  the private database prefix, e.g. /database/1/iCloud.x/development/private
 *   TOKENS  a file with bearer tokens, one a line; writer k uses line k, reader i line WRITERS+i
 *           (modulo the number of lines), so each client can be its own device
 *   defaults: HOST 127.0.0.1, ZONE Checker, 32 writers, 8 readers, 30 s, WAIT 3 s, 8 shared names
 *
 * Workload. WRITERS threads (one keep-alive connection each) run `records/modify` back to back in
 * one zone: creates of new names, forceUpdate and tag-checked update of their own names,
 * forceUpdate of SHARED names written by everyone, forceDelete and re-create of their own names,
 * and atomic batches of 3-4 operations mixing all of these (the batches with a delete take the
 * server's locked transaction path, plain saves its single-statement path). READERS threads follow
 * the zone's feed with their sync tokens, pages of 1..60 records; odd readers long-poll (`wait`)
 * when they are caught up, even readers poll after a random 0..20 ms; the last quarter of the
 * readers join late, from no token. When the writers stop, every reader catches up once more
 * (until `moreComing` is false on a request sent after the last acknowledgement).
 *
 * Recorder. Every acknowledged operation (a 200 answer; its item not an error) is logged: record
 * name, its change tag (base 36 of the zone sequence; a deletion has none) and the order of the
 * acknowledgement within its writer. Expected final state of a name: the last acknowledgement of
 * its owner for the writers' own names (one writer, sequential requests: acknowledgement order is
 * commit order), the highest tag for shared names (never deleted).
 *
 * Checks (each count must be 0):
 *   lost        the server's state (records/lookup after the run) differs from the expected final
 *               state of a name: an acknowledged write is not durable (or the recorder is wrong)
 *   missed      per reader and name: the reader's final state differs from the expected final
 *               state (live with another tag, or missing, or live although deleted); the reader
 *               never received that acknowledged write although its token passed it
 *   duplicated  per reader: a record version (name and change tag) received a second time, in the
 *               same page or a later one (the token must advance past what was returned)
 *   regressed   per reader: a record version older than one already received for that name
 *   token       per reader: the sequence inside a token (tokens are signed, not encrypted: bytes
 *               18..25 of the base64url payload) went backwards, or a page held a record outside
 *               (previous token, new token], or a page was not in ascending tag order
 *   unexpected  a reader holds a name no writer ever sent
 *   errors      non-200 answers, item errors, socket faults (there is no fault injection here
 *               other than the server's commit delay, so every error is a failure)
 * -U (failover runs, Tests/integration/scenarios/96-98): a 503 TRY_AGAIN_LATER answer is allowed and
 * counted as `unavailable`, not as an error. Its write's outcome is unknown (it may have committed):
 * its own names are not used again and are left out of `lost`; a shared name it touched must end at
 * least at its highest acknowledged tag; and for every such name each reader must end holding what
 * the server holds (so a committed-but-unacknowledged change a reader skipped is still `missed`).
 * It prints the figures and `RESULT: PASS` or `RESULT: FAIL ...` and exits 0 or 1 (2 on bad usage).
 * Bounded in time: the run ends SECONDS after the start plus at most 60 s of catch-up.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../bench/httpclient.h"

/* ------------------------------------------------------------------ configuration */
static const char *host = "127.0.0.1", *dbpath, *zone = "Checker", *tokens_file;
static int ports[8], nports, nwriters = 32, nreaders = 8, wait_seconds = 3, nshared = 8, allow_unavailable;
static atomic_long unavailable_writes, unavailable_reads;
/* Shared names (by number) touched by a write of unknown outcome (-U). */
static atomic_int shared_unknown[256];
static double seconds = 30;
static char **tokens;
static int ntokens;
static atomic_int stop_writers, writers_done;
static double t_start;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *message) {
    fprintf(stderr, "nmcheck: %s\n", message);
    exit(2);
}

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) die("out of memory");
    return p;
}

static atomic_int reported;
#define REPORT(...) do { if (atomic_fetch_add(&reported, 1) < 40) fprintf(stderr, __VA_ARGS__); } while (0)

/* ------------------------------------------------------------------ record names */
/* Every name a writer sends (or a reader receives) gets an id; ids index the per-reader arrays. */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static char **names;
static int nnames, names_cap;
static int *slots;            /* open addressing: id + 1, 0 empty */
static size_t nslots;

static uint64_t hash_name(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ULL; }
    return h;
}

static int intern_locked(const char *s, size_t n) {
    if ((size_t)nnames * 2 + 2 >= nslots) {
        size_t grown = nslots ? nslots * 2 : 4096;
        int *fresh = calloc(grown, sizeof *fresh);
        if (!fresh) die("out of memory");
        for (int id = 0; id < nnames; id++) {
            size_t at = hash_name(names[id], strlen(names[id])) & (grown - 1);
            while (fresh[at]) at = (at + 1) & (grown - 1);
            fresh[at] = id + 1;
        }
        free(slots);
        slots = fresh;
        nslots = grown;
    }
    size_t at = hash_name(s, n) & (nslots - 1);
    while (slots[at]) {
        const char *other = names[slots[at] - 1];
        if (strlen(other) == n && memcmp(other, s, n) == 0) return slots[at] - 1;
        at = (at + 1) & (nslots - 1);
    }
    if (nnames == names_cap) {
        names_cap = names_cap ? names_cap * 2 : 1024;
        names = xrealloc(names, (size_t)names_cap * sizeof *names);
    }
    names[nnames] = strndup(s, n);
    slots[at] = nnames + 1;
    return nnames++;
}

static int intern(const char *s, size_t n) {
    pthread_mutex_lock(&names_lock);
    int id = intern_locked(s, n);
    pthread_mutex_unlock(&names_lock);
    return id;
}

static const char *name_of(int id) {
    pthread_mutex_lock(&names_lock);
    const char *s = names[id];
    pthread_mutex_unlock(&names_lock);
    return s;
}

/* ------------------------------------------------------------------ the recorder */
typedef struct { int name; int writer; long order; int64_t seq; int deleted; } ack_t;
static pthread_mutex_t acks_lock = PTHREAD_MUTEX_INITIALIZER;
static ack_t *acks;
static long nacks, acks_cap;
static atomic_long write_requests, write_errors, atomic_batches, deletes_acked;

static void record_ack(int name, int writer, long order, int64_t seq, int deleted) {
    pthread_mutex_lock(&acks_lock);
    if (nacks == acks_cap) {
        acks_cap = acks_cap ? acks_cap * 2 : 8192;
        acks = xrealloc(acks, (size_t)acks_cap * sizeof *acks);
    }
    acks[nacks++] = (ack_t){ name, writer, order, seq, deleted };
    pthread_mutex_unlock(&acks_lock);
}

/* ------------------------------------------------------------------ HTTP client (bench/httpclient.h) */
typedef struct {
    http_conn http;  /* the keep-alive connection, its buffers and the last answer's body */
    char *req; size_t reqcap;
    unsigned long long rng;
    int port;        /* 0: the first of -p */
} conn_t;

static unsigned long long xrand(conn_t *c) {
    c->rng ^= c->rng >> 12; c->rng ^= c->rng << 25; c->rng ^= c->rng >> 27;
    return c->rng * 2685821657736338717ULL;
}

/* POST DBPATH/OP with BODY; the answer's body in c->http.body. Returns the status, or -1 (socket fault;
 * the connection is reopened for the next request). */
static int post(conn_t *c, const char *token, const char *op, const char *body, size_t n) {
    if (c->http.fd < 0 && (c->http.fd = http_connect(host, c->port ? c->port : ports[0], 90)) < 0) return -1;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dbpath, op);
    http_grow(&c->req, &c->reqcap, n + 1024 + strlen(path) + strlen(token));
    int h = http_post_head(c->req, c->reqcap, path, host, c->port ? c->port : ports[0], token, n);
    memcpy(c->req + h, body, n);
    return http_exchange(&c->http, c->req, (size_t)h + n);
}

/* ------------------------------------------------------------------ answer parsing */
/* Answers are compact JSON written by the server with record keys in a fixed order: recordName,
 * recordType, recordChangeTag, fields, ... (a tombstone: recordName, recordType, deleted; an error
 * item: recordName, uuid, serverErrorCode, ...). Field values here never contain quotes. */
typedef struct { const char *name; size_t name_len; int64_t seq; int deleted; int error; } item_t;

static int64_t base36(const char *s, size_t n) {
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'z' ? ch - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 36 + d;
    }
    return v;
}

/* The items of the top-level "records" array, each starting with {"recordName":" after [ or ,. */
static int parse_items(char *body, size_t len, item_t **out, size_t *cap) {
    int count = 0;
    char *p = body, *e = body + len;
    const char *key = "{\"recordName\":\"";
    size_t klen = strlen(key);
    while ((p = memmem(p, (size_t)(e - p), key, klen))) {
        if (p == body || (p[-1] != '[' && p[-1] != ',')) { p += klen; continue; }
        char *name = p + klen;
        char *q = memchr(name, '"', (size_t)(e - name));
        if (!q) break;
        char *next = memmem(q, (size_t)(e - q), key, klen);
        char *stop = next ? next : e;
        item_t it = { name, (size_t)(q - name), -1, 0, 0 };
        size_t span = (size_t)(stop - q);
        char *tag = memmem(q, span, "\"recordChangeTag\":\"", 19);
        if (memmem(q, span < 80 ? span : 80, "\"serverErrorCode\":", 18)) it.error = 1;
        else if (memmem(q, span < 120 ? span : 120, "\"deleted\":true", 14) && !tag) it.deleted = 1;
        else if (tag) {
            char *t = tag + 19, *te = memchr(t, '"', (size_t)(stop - t));
            if (te) it.seq = base36(t, (size_t)(te - t));
        }
        if ((size_t)count == *cap) { *cap = *cap ? *cap * 2 : 64; *out = xrealloc(*out, *cap * sizeof **out); }
        (*out)[count++] = it;
        p = q;
    }
    return count;
}

/* The last "KEY":"value" string of the body (the top-level syncToken comes last). */
static int last_string(const char *body, size_t len, const char *key, char *out, size_t outcap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    size_t plen = strlen(pattern);
    const char *found = NULL, *p = body, *e = body + len;
    while ((p = memmem(p, (size_t)(e - p), pattern, plen))) { found = p; p += plen; }
    if (!found) return -1;
    found += plen;
    const char *q = memchr(found, '"', (size_t)(e - found));
    if (!q || (size_t)(q - found) >= outcap) return -1;
    memcpy(out, found, (size_t)(q - found));
    out[q - found] = 0;
    return 0;
}

/* The sequence a zone token carries: base64url of version, kind, database, zone, sequence, MAC. */
static int64_t token_sequence(const char *token) {
    unsigned char bytes[64];
    int nbytes = 0, bits = 0;
    unsigned acc = 0;
    for (const char *p = token; *p && nbytes < 64; p++) {
        int v = *p >= 'A' && *p <= 'Z' ? *p - 'A' : *p >= 'a' && *p <= 'z' ? *p - 'a' + 26 :
                *p >= '0' && *p <= '9' ? *p - '0' + 52 : *p == '-' ? 62 : *p == '_' ? 63 : -1;
        if (v < 0) break;
        acc = (acc << 6) | (unsigned)v; bits += 6;
        if (bits >= 8) { bits -= 8; bytes[nbytes++] = (unsigned char)(acc >> bits); }
    }
    if (nbytes < 26 || bytes[1] != 1) return -1;
    int64_t s = 0;
    for (int i = 18; i < 26; i++) s = (s << 8) | bytes[i];
    return s;
}

/* ------------------------------------------------------------------ writers */
typedef struct { int name; int64_t seq; int live; int unknown; } own_t;

typedef struct {
    int k;
    conn_t c;
    own_t *own; int nown, owncap;
    long order, n;
    char *body; size_t bodycap;
} writer_t;

static size_t append(char **buf, size_t *cap, size_t at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static size_t append(char **buf, size_t *cap, size_t at, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(*buf + at, *cap - at, fmt, ap);
        va_end(ap);
        if ((size_t)w < *cap - at) return at + (size_t)w;
        http_grow(buf, cap, at + (size_t)w + 1);
    }
}

static int pick_live(writer_t *w, int except) {
    int live = 0;
    for (int i = 0; i < w->nown; i++) if (w->own[i].live && !w->own[i].unknown && i != except) live++;
    if (!live) return -1;
    int target = (int)(xrand(&w->c) % (unsigned)live);
    for (int i = 0; i < w->nown; i++) if (w->own[i].live && !w->own[i].unknown && i != except && target-- == 0) return i;
    return -1;
}

static int pick_dead(writer_t *w) {
    int dead = 0;
    for (int i = 0; i < w->nown; i++) if (!w->own[i].live && !w->own[i].unknown) dead++;
    if (!dead) return -1;
    int target = (int)(xrand(&w->c) % (unsigned)dead);
    for (int i = 0; i < w->nown; i++) if (!w->own[i].live && !w->own[i].unknown && target-- == 0) return i;
    return -1;
}

static int add_own(writer_t *w, const char *name) {
    if (w->nown == w->owncap) { w->owncap = w->owncap ? w->owncap * 2 : 256; w->own = xrealloc(w->own, (size_t)w->owncap * sizeof *w->own); }
    w->own[w->nown] = (own_t){ intern(name, strlen(name)), -1, 0, 0 };
    return w->nown++;
}

#define MAXOPS 4
typedef struct { int own;  /* index in own, or -1 for a shared name */ int name; int kind; } op_t;
enum { OP_SAVE, OP_DELETE };

static size_t op_json(writer_t *w, size_t at, const char *type, int name, const char *tag) {
    if (at > 0 && w->body[at - 1] == '}') at = append(&w->body, &w->bodycap, at, ",");
    if (strcmp(type, "forceDelete") == 0)
        return append(&w->body, &w->bodycap, at, "{\"operationType\":\"forceDelete\",\"record\":{\"recordName\":\"%s\"}}", name_of(name));
    at = append(&w->body, &w->bodycap, at, "{\"operationType\":\"%s\",\"record\":{\"recordName\":\"%s\",\"recordType\":\"Item\",",
                type, name_of(name));
    if (tag) at = append(&w->body, &w->bodycap, at, "\"recordChangeTag\":\"%s\",", tag);
    return append(&w->body, &w->bodycap, at,
                  "\"fields\":{\"writer\":{\"value\":%d},\"n\":{\"value\":%ld},\"payload\":{\"value\":\"%llx\"}}}}",
                  w->k, w->n, (unsigned long long)xrand(&w->c));
}

static void tag_text(int64_t seq, char *out) {
    char tmp[32]; int n = 0;
    do { int d = (int)(seq % 36); tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10); seq /= 36; } while (seq > 0);
    for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    out[n] = 0;
}

static void *writer_main(void *arg) {
    writer_t *w = arg;
    const char *token = tokens[w->k % ntokens];
    item_t *items = NULL; size_t icap = 0;
    char name[96], tag[32];
    while (!atomic_load(&stop_writers)) {
        w->n++;
        op_t ops[MAXOPS]; int nops = 0, atomic = 0;
        size_t at = append(&w->body, &w->bodycap, 0, "{\"zoneID\":{\"zoneName\":\"%s\"},\"operations\":[", zone);
        size_t start = at;
        int roll = (int)(xrand(&w->c) % 100);
        int live = pick_live(w, -1);
        if (roll < 30 || live < 0) {
            snprintf(name, sizeof name, "w%d-%ld", w->k, w->n);
            int i = add_own(w, name);
            at = op_json(w, at, "create", w->own[i].name, NULL);
            ops[nops++] = (op_t){ i, w->own[i].name, OP_SAVE };
        } else if (roll < 48) {
            at = op_json(w, at, "forceUpdate", w->own[live].name, NULL);
            ops[nops++] = (op_t){ live, w->own[live].name, OP_SAVE };
        } else if (roll < 60) {
            tag_text(w->own[live].seq, tag);
            at = op_json(w, at, "update", w->own[live].name, tag);
            ops[nops++] = (op_t){ live, w->own[live].name, OP_SAVE };
        } else if (roll < 70) {
            snprintf(name, sizeof name, "s%d", (int)(xrand(&w->c) % (unsigned)nshared));
            int id = intern(name, strlen(name));
            at = op_json(w, at, "forceUpdate", id, NULL);
            ops[nops++] = (op_t){ -1, id, OP_SAVE };
        } else if (roll < 78) {
            at = op_json(w, at, "forceDelete", w->own[live].name, NULL);
            ops[nops++] = (op_t){ live, w->own[live].name, OP_DELETE };
        } else if (roll < 84 && pick_dead(w) >= 0) {
            int dead = pick_dead(w);
            at = op_json(w, at, "create", w->own[dead].name, NULL);
            ops[nops++] = (op_t){ dead, w->own[dead].name, OP_SAVE };
        } else {
            /* An atomic batch: a new name, an own name updated, a shared name, and sometimes an
             * own name deleted (which sends the batch down the locked path). */
            atomic = 1;
            snprintf(name, sizeof name, "w%d-%ld-a", w->k, w->n);
            int i = add_own(w, name);
            at = op_json(w, at, "create", w->own[i].name, NULL);
            ops[nops++] = (op_t){ i, w->own[i].name, OP_SAVE };
            at = op_json(w, at, "forceUpdate", w->own[live].name, NULL);
            ops[nops++] = (op_t){ live, w->own[live].name, OP_SAVE };
            snprintf(name, sizeof name, "s%d", (int)(xrand(&w->c) % (unsigned)nshared));
            int id = intern(name, strlen(name));
            at = op_json(w, at, "forceUpdate", id, NULL);
            ops[nops++] = (op_t){ -1, id, OP_SAVE };
            int other = pick_live(w, live);
            if (other >= 0 && other != i && xrand(&w->c) % 2) {
                at = op_json(w, at, "forceDelete", w->own[other].name, NULL);
                ops[nops++] = (op_t){ other, w->own[other].name, OP_DELETE };
            }
        }
        (void)start;
        at = append(&w->body, &w->bodycap, at, "]%s}", atomic ? ",\"atomic\":true" : "");
        atomic_fetch_add(&write_requests, 1);
        int status = post(&w->c, token, "records/modify", w->body, at);
        if (status == 503 && allow_unavailable && memmem(w->c.http.body, w->c.http.bodylen, "TRY_AGAIN_LATER", 15)) {
            /* -U: allowed, outcome unknown. */
            atomic_fetch_add(&unavailable_writes, 1);
            for (int j = 0; j < nops; j++) {
                if (ops[j].own >= 0) { w->own[ops[j].own].unknown = 1; w->own[ops[j].own].live = 0; }
                else { const char *sn = name_of(ops[j].name); if (sn[0] == 's') atomic_store(&shared_unknown[atoi(sn + 1) & 255], 1); }
            }
            usleep(100000);
            continue;
        }
        if (status != 200) {
            atomic_fetch_add(&write_errors, 1);
            REPORT("writer %d: status %d: %.300s\n", w->k, status, status > 0 ? w->c.http.body : "(socket fault)");
            /* The outcome is unknown: stop using these names (they are left out of the check). */
            for (int j = 0; j < nops; j++) if (ops[j].own >= 0) w->own[ops[j].own].live = 0;
            usleep(100000);
            continue;
        }
        int nitems = parse_items(w->c.http.body, w->c.http.bodylen, &items, &icap);
        if (nitems != nops) {
            atomic_fetch_add(&write_errors, 1);
            REPORT("writer %d: %d items for %d operations: %.300s\n", w->k, nitems, nops, w->c.http.body);
            continue;
        }
        int failed = 0;
        for (int j = 0; j < nops; j++) {
            if (items[j].error || (ops[j].kind == OP_SAVE && items[j].seq < 0) || (ops[j].kind == OP_DELETE && !items[j].deleted)
                || items[j].name_len != strlen(name_of(ops[j].name)) || memcmp(items[j].name, name_of(ops[j].name), items[j].name_len) != 0) {
                failed = 1;
            }
        }
        if (failed) {
            atomic_fetch_add(&write_errors, 1);
            REPORT("writer %d: unexpected items: %.400s\n", w->k, w->c.http.body);
            continue;
        }
        if (atomic) atomic_fetch_add(&atomic_batches, 1);
        w->order++;
        for (int j = 0; j < nops; j++) {
            record_ack(ops[j].name, w->k, w->order, items[j].seq, ops[j].kind == OP_DELETE);
            if (ops[j].kind == OP_DELETE) atomic_fetch_add(&deletes_acked, 1);
            if (ops[j].own >= 0) {
                w->own[ops[j].own].live = ops[j].kind == OP_SAVE;
                w->own[ops[j].own].seq = items[j].seq;
            }
        }
    }
    free(items);
    return NULL;
}

/* ------------------------------------------------------------------ readers */
enum { HELD_NONE = 0, HELD_LIVE = 1, HELD_TOMBSTONE = 2 };
typedef struct {
    int i, late, longpoll;
    conn_t c;
    int64_t *held_seq; unsigned char *held; int held_cap;
    long pages, received, more_pages, waits_answered, waits_empty;
    long duplicated, regressed, token_errors, errors;
    int64_t token_seq;
    char token[512];
} reader_t;

static void hold_grow(reader_t *r, int id) {
    if (id < r->held_cap) return;
    int cap = r->held_cap ? r->held_cap : 1024;
    while (cap <= id) cap *= 2;
    r->held_seq = xrealloc(r->held_seq, (size_t)cap * sizeof *r->held_seq);
    r->held = xrealloc(r->held, (size_t)cap);
    memset(r->held_seq + r->held_cap, 0, (size_t)(cap - r->held_cap) * sizeof *r->held_seq);
    memset(r->held + r->held_cap, 0, (size_t)(cap - r->held_cap));
    r->held_cap = cap;
}

static void *reader_main(void *arg) {
    reader_t *r = arg;
    const char *token = tokens[(nwriters + r->i) % ntokens];
    item_t *items = NULL; size_t icap = 0;
    char body[1024];
    int final = 0, caught_up = 0;
    if (r->late) {
        while (!atomic_load(&stop_writers) && now_s() - t_start < seconds / 3) usleep(20000);
    }
    r->token[0] = 0;
    r->token_seq = 0;
    double deadline = t_start + seconds + 60;
    while (now_s() < deadline) {
        int limit = 1 + (int)(xrand(&r->c) % 60);
        int waiting = r->longpoll && caught_up && !atomic_load(&writers_done);
        if (!final && atomic_load(&writers_done)) final = 1;  /* this request starts after the last ack */
        int n = snprintf(body, sizeof body, "{\"zoneID\":{\"zoneName\":\"%s\"},\"resultsLimit\":%d%s%s%s", zone, limit,
                         r->token[0] ? ",\"syncToken\":\"" : "", r->token, r->token[0] ? "\"" : "");
        if (waiting) n += snprintf(body + n, sizeof body - (size_t)n, ",\"wait\":%d", wait_seconds);
        n += snprintf(body + n, sizeof body - (size_t)n, "}");
        int status = post(&r->c, token, "records/changes", body, (size_t)n);
        if (status == 503 && allow_unavailable && memmem(r->c.http.body, r->c.http.bodylen, "TRY_AGAIN_LATER", 15)) {
            atomic_fetch_add(&unavailable_reads, 1);
            usleep(100000);
            continue;
        }
        if (status != 200) {
            r->errors++;
            REPORT("reader %d: status %d: %.300s\n", r->i, status, status > 0 ? r->c.http.body : "(socket fault)");
            usleep(100000);
            continue;
        }
        r->pages++;
        char next[512];
        if (last_string(r->c.http.body, r->c.http.bodylen, "syncToken", next, sizeof next) != 0) {
            r->errors++;
            REPORT("reader %d: no syncToken in %.300s\n", r->i, r->c.http.body);
            continue;
        }
        int64_t next_seq = token_sequence(next);
        int more = memmem(r->c.http.body, r->c.http.bodylen, "\"moreComing\":true", 17) != NULL;
        int nitems = parse_items(r->c.http.body, r->c.http.bodylen, &items, &icap);
        if (waiting) { if (nitems) r->waits_answered++; else r->waits_empty++; }
        if (next_seq < 0 || next_seq < r->token_seq) {
            r->token_errors++;
            REPORT("reader %d: token sequence %lld after %lld\n", r->i, (long long)next_seq, (long long)r->token_seq);
        }
        int64_t previous = r->token_seq, last = previous;
        for (int j = 0; j < nitems; j++) {
            item_t *it = &items[j];
            if (it->error) { r->errors++; continue; }
            int id = intern(it->name, it->name_len);
            hold_grow(r, id);
            r->received++;
            if (it->deleted) {
                r->held[id] = HELD_TOMBSTONE;
                continue;
            }
            if (it->seq <= previous || it->seq > next_seq || it->seq <= last) {
                r->token_errors++;
                REPORT("reader %d: %s at %lld outside (%lld, %lld] or not ascending (after %lld)\n", r->i, name_of(id),
                       (long long)it->seq, (long long)previous, (long long)next_seq, (long long)last);
            }
            last = it->seq;
            if (r->held[id] == HELD_LIVE && r->held_seq[id] == it->seq) {
                r->duplicated++;
                REPORT("reader %d: %s at %lld received twice\n", r->i, name_of(id), (long long)it->seq);
            } else if (r->held_seq[id] > it->seq) {
                r->regressed++;
                REPORT("reader %d: %s at %lld after %lld\n", r->i, name_of(id), (long long)it->seq, (long long)r->held_seq[id]);
            }
            r->held[id] = HELD_LIVE;
            if (it->seq > r->held_seq[id]) r->held_seq[id] = it->seq;
        }
        strcpy(r->token, next);
        if (next_seq > r->token_seq) r->token_seq = next_seq;
        if (more) { r->more_pages++; caught_up = 0; continue; }
        caught_up = 1;
        if (final) break;
        if (!r->longpoll) usleep((useconds_t)(xrand(&r->c) % 20000));
    }
    if (!final) { r->errors++; REPORT("reader %d: did not catch up within 60 s after the writers\n", r->i); }
    free(items);
    return NULL;
}

/* ------------------------------------------------------------------ setup and the check */
static int setup_request(conn_t *c, const char *op, const char *body) {
    int status = post(c, tokens[0], op, body, strlen(body));
    if (status != 200) {
        fprintf(stderr, "nmcheck: %s answered %d: %.300s\n", op, status, status > 0 ? c->http.body : "(socket fault)");
        exit(2);
    }
    return status;
}

int main(int argc, char **argv) {
    int opt;
    while ((opt = getopt(argc, argv, "h:p:d:z:t:w:r:s:W:S:U")) != -1) {
        switch (opt) {
        case 'h': host = optarg; break;
        case 'p':   /* PORT or PORT,PORT,...: writers and readers take them in turn */
            for (char *part = strtok(optarg, ","); part && nports < 8; part = strtok(NULL, ",")) ports[nports++] = atoi(part);
            break;
        case 'd': dbpath = optarg; break;
        case 'z': zone = optarg; break;
        case 't': tokens_file = optarg; break;
        case 'w': nwriters = atoi(optarg); break;
        case 'r': nreaders = atoi(optarg); break;
        case 's': seconds = atof(optarg); break;
        case 'W': wait_seconds = atoi(optarg); break;
        case 'S': nshared = atoi(optarg); break;
        case 'U': allow_unavailable = 1; break;
        default: die("usage: nmcheck -p PORT -d DBPATH -t TOKENS [-h HOST] [-z ZONE] [-w W] [-r R] [-s SECONDS] [-W WAIT] [-S SHARED] [-U]");
        }
    }
    if (!nports || !ports[0] || !dbpath || !tokens_file || nwriters < 1 || nreaders < 1 || nshared < 1 || nshared > 256) die("-p, -d and -t are required");
    if (strlen(dbpath) > 900) die("DBPATH is too long");
    FILE *f = fopen(tokens_file, "r");
    if (!f) die("cannot read the tokens file");
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0]) continue;
        tokens = xrealloc(tokens, (size_t)(ntokens + 1) * sizeof *tokens);
        tokens[ntokens++] = strdup(line);
    }
    fclose(f);
    if (!ntokens) die("no tokens");

    conn_t setup = { .http.fd = -1, .rng = 88172645463325252ULL };
    char body[1024];
    snprintf(body, sizeof body, "{\"operations\":[{\"operationType\":\"create\",\"zone\":{\"zoneID\":{\"zoneName\":\"%s\"}}}]}", zone);
    setup_request(&setup, "zones/modify", body);
    /* The first save defines the type's fields (development schema) before the writers race. */
    snprintf(body, sizeof body, "{\"zoneID\":{\"zoneName\":\"%s\"},\"operations\":[{\"operationType\":\"forceUpdate\",\"record\":"
             "{\"recordName\":\"seed\",\"recordType\":\"Item\",\"fields\":{\"writer\":{\"value\":0},\"n\":{\"value\":0},"
             "\"payload\":{\"value\":\"seed\"}}}}]}", zone);
    setup_request(&setup, "records/modify", body);
    item_t *items = NULL; size_t icap = 0;
    if (parse_items(setup.http.body, setup.http.bodylen, &items, &icap) != 1 || items[0].seq < 0) die("the seed record was not saved");
    record_ack(intern("seed", 4), -1, 0, items[0].seq, 0);

    printf("nmcheck: %d writers, %d readers (%d long-polling, %d joining late), %.0f s, zone %s, %d shared names\n",
           nwriters, nreaders, nreaders / 2, nreaders / 4, seconds, zone, nshared);
    fflush(stdout);
    t_start = now_s();
    reader_t *readers = calloc((size_t)nreaders, sizeof *readers);
    writer_t *writers = calloc((size_t)nwriters, sizeof *writers);
    pthread_t *rt = calloc((size_t)nreaders, sizeof *rt), *wt = calloc((size_t)nwriters, sizeof *wt);
    for (int i = 0; i < nreaders; i++) {
        readers[i] = (reader_t){ .i = i, .late = i >= nreaders - nreaders / 4, .longpoll = i % 2 == 1,
                                 .c = { .http.fd = -1, .rng = 0x9E3779B97F4A7C15ULL * (unsigned)(i + 1) + (unsigned long long)time(NULL), .port = ports[(i + 1) % nports] } };
        pthread_create(&rt[i], NULL, reader_main, &readers[i]);
    }
    for (int k = 0; k < nwriters; k++) {
        writers[k] = (writer_t){ .k = k, .c = { .http.fd = -1, .rng = 0xD1B54A32D192ED03ULL * (unsigned)(k + 7) + (unsigned long long)time(NULL), .port = ports[k % nports] } };
        pthread_create(&wt[k], NULL, writer_main, &writers[k]);
    }
    while (now_s() - t_start < seconds) usleep(50000);
    atomic_store(&stop_writers, 1);
    for (int k = 0; k < nwriters; k++) pthread_join(wt[k], NULL);
    double writes_end = now_s();
    atomic_store(&writers_done, 1);
    for (int i = 0; i < nreaders; i++) pthread_join(rt[i], NULL);
    double readers_end = now_s();

    /* Expected final state per name. */
    int total = nnames;
    int64_t *exp_seq = calloc((size_t)total, sizeof *exp_seq);
    long *exp_order = calloc((size_t)total, sizeof *exp_order);
    unsigned char *exp = calloc((size_t)total, 1);      /* HELD_* */
    unsigned char *shared = calloc((size_t)total, 1);
    for (int id = 0; id < total; id++) shared[id] = names[id][0] == 's' || strcmp(names[id], "seed") == 0;
    for (long a = 0; a < nacks; a++) {
        ack_t *x = &acks[a];
        if (shared[x->name]) {
            if (x->seq > exp_seq[x->name]) { exp_seq[x->name] = x->seq; exp[x->name] = HELD_LIVE; }
        } else if (x->order >= exp_order[x->name]) {
            exp_order[x->name] = x->order;
            exp_seq[x->name] = x->seq;
            exp[x->name] = x->deleted ? HELD_TOMBSTONE : HELD_LIVE;
        }
    }
    /* Names whose last operation had an unknown outcome are left out (there are none without errors). */
    unsigned char *unknown = calloc((size_t)total, 1);
    for (int k = 0; k < nwriters; k++) {
        for (int j = 0; j < writers[k].nown; j++) {
            own_t *o = &writers[k].own[j];
            if (!o->live && exp[o->name] == HELD_LIVE && o->seq == exp_seq[o->name]) unknown[o->name] = 1;
            if (o->unknown) unknown[o->name] = 1;
        }
    }
    /* -U: shared names touched by a write of unknown outcome end at or above their highest ack. */
    unsigned char *at_least = calloc((size_t)total, 1);
    for (int id = 0; id < total; id++)
        if (names[id][0] == 's' && atomic_load(&shared_unknown[atoi(names[id] + 1) & 255])) at_least[id] = 1;
    /* The server's final state of every name, for the names of unknown outcome. */
    unsigned char *srv_present = calloc((size_t)total, 1);
    int64_t *srv_seq = calloc((size_t)total, sizeof *srv_seq);
    long unknown_names = 0;

    /* Ground truth: records/lookup of every name, on a fresh connection (the setup one has been
     * idle since the start, longer than the server's keep-alive timeout in long runs). */
    http_close(&setup.http);
    long lost = 0, checked_names = 0, live_names = 0, deleted_names = 0;
    char *lookup = NULL; size_t lcap = 0;
    for (int from = 0; from < total; from += 200) {
        size_t at = append(&lookup, &lcap, 0, "{\"zoneID\":{\"zoneName\":\"%s\"},\"records\":[", zone);
        int to = from + 200 < total ? from + 200 : total;
        for (int id = from; id < to; id++) at = append(&lookup, &lcap, at, "%s{\"recordName\":\"%s\"}", id > from ? "," : "", names[id]);
        at = append(&lookup, &lcap, at, "]}");
        int status = post(&setup, tokens[0], "records/lookup", lookup, at);
        for (int tries = 0; status == 503 && allow_unavailable && tries < 300; tries++) {
            usleep(100000);
            status = post(&setup, tokens[0], "records/lookup", lookup, at);
        }
        if (status != 200) { fprintf(stderr, "nmcheck: records/lookup answered %d\n", status); return 2; }
        /* NOT_FOUND items are error items: a missing (or deleted) record. */
        char *p = setup.http.body, *e = setup.http.body + setup.http.bodylen;
        for (int id = from; id < to; id++) {
            char key[160];
            int klen = snprintf(key, sizeof key, "{\"recordName\":\"%s\",", names[id]);
            char *hit = memmem(p, (size_t)(e - p), key, (size_t)klen);
            if (!hit) { fprintf(stderr, "nmcheck: records/lookup has no item for %s\n", names[id]); return 2; }
            char *stop = memmem(hit + klen, (size_t)(e - hit - klen), "{\"recordName\":\"", 15);
            if (!stop) stop = e;
            int present = !memmem(hit, (size_t)(stop - hit) < 90 ? (size_t)(stop - hit) : 90, "\"serverErrorCode\"", 17);
            int64_t seq = -1;
            char *tag = memmem(hit, (size_t)(stop - hit), "\"recordChangeTag\":\"", 19);
            if (present && tag) { char *t = tag + 19; seq = base36(t, (size_t)((char *)memchr(t, '"', (size_t)(e - t)) - t)); }
            srv_present[id] = (unsigned char)present;
            srv_seq[id] = seq;
            if (unknown[id]) unknown_names++;
            if (unknown[id] || !exp[id]) { p = stop; continue; }
            checked_names++;
            if (exp[id] == HELD_LIVE) live_names++; else deleted_names++;
            int good = exp[id] == HELD_LIVE ? present && (seq == exp_seq[id] || (at_least[id] && seq > exp_seq[id])) : !present;
            if (!good) {
                lost++;
                REPORT("lost: %s expected %s at %lld, the server has %s at %lld\n", names[id], exp[id] == HELD_LIVE ? "live" : "deleted",
                       (long long)exp_seq[id], present ? "live" : "nothing", (long long)seq);
            }
            p = stop;
        }
    }

    long missed = 0, duplicated = 0, regressed = 0, token_errors = 0, unexpected = 0, read_errors = 0, pages = 0, received = 0;
    printf("nmcheck: %ld write requests, %ld acknowledged operations (%ld atomic batches, %ld deletions), %ld write errors in %.1f s\n",
           (long)atomic_load(&write_requests), nacks, (long)atomic_load(&atomic_batches), (long)atomic_load(&deletes_acked),
           (long)atomic_load(&write_errors), writes_end - t_start);
    for (int i = 0; i < nreaders; i++) {
        reader_t *r = &readers[i];
        hold_grow(r, total);
        long m = 0, u = 0;
        for (int id = 0; id < total; id++) {
            if (!exp[id] && !(allow_unavailable && unknown[id])) {
                if (r->held[id] == HELD_LIVE) { u++; REPORT("reader %d holds %s, never sent by a writer\n", i, names[id]); }
                continue;
            }
            int good;
            if (unknown[id] || at_least[id]) {
                if (!allow_unavailable) continue;
                /* Outcome unknown: the reader must hold what the server holds. */
                good = srv_present[id] ? r->held[id] == HELD_LIVE && r->held_seq[id] == srv_seq[id] : r->held[id] != HELD_LIVE;
            } else {
                good = exp[id] == HELD_LIVE ? r->held[id] == HELD_LIVE && r->held_seq[id] == exp_seq[id] : r->held[id] != HELD_LIVE;
            }
            if (!good) {
                m++;
                REPORT("reader %d missed %s: expected %s at %lld, holds %s at %lld\n", i, names[id], exp[id] == HELD_LIVE ? "live" : "deleted",
                       (long long)exp_seq[id], r->held[id] == HELD_LIVE ? "live" : r->held[id] ? "tombstone" : "nothing", (long long)r->held_seq[id]);
            }
        }
        printf("nmcheck: reader %d (%s%s): %ld pages (%ld with moreComing), %ld records, waits %ld answered / %ld empty; "
               "missed %ld, duplicated %ld, regressed %ld, token %ld, unexpected %ld, errors %ld\n",
               i, r->longpoll ? "long-poll" : "poll", r->late ? ", late" : "", r->pages, r->more_pages, r->received,
               r->waits_answered, r->waits_empty, m, r->duplicated, r->regressed, r->token_errors, u, r->errors);
        missed += m; unexpected += u; duplicated += r->duplicated; regressed += r->regressed;
        token_errors += r->token_errors; read_errors += r->errors; pages += r->pages; received += r->received;
    }
    long errors = (long)atomic_load(&write_errors) + read_errors;
    printf("nmcheck: %ld names checked (%ld live, %ld deleted), catch-up %.1f s; readers: %ld pages, %ld records\n",
           checked_names, live_names, deleted_names, readers_end - writes_end, pages, received);
    if (allow_unavailable)
        printf("nmcheck: unavailable: %ld writes, %ld reads answered 503 TRY_AGAIN_LATER; %ld names of unknown outcome checked against the server\n",
               (long)atomic_load(&unavailable_writes), (long)atomic_load(&unavailable_reads), unknown_names);
    printf("nmcheck: lost %ld, missed %ld, duplicated %ld, regressed %ld, token %ld, unexpected %ld, errors %ld\n",
           lost, missed, duplicated, regressed, token_errors, unexpected, errors);
    int weak = nacks < 200 || atomic_load(&deletes_acked) == 0;
    if (lost || missed || duplicated || regressed || token_errors || unexpected || errors || weak) {
        printf("RESULT: FAIL%s%s%s%s%s%s%s%s\n", lost ? " lost" : "", missed ? " missed" : "", duplicated ? " duplicated" : "",
               regressed ? " regressed" : "", token_errors ? " token" : "", unexpected ? " unexpected" : "", errors ? " errors" : "",
               weak ? " too-few-writes" : "");
        return 1;
    }
    printf("RESULT: PASS\n");
    return 0;
}
