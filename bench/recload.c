/*
 * recload: HTTP load generator for bench/records.sh (compiled at run time with cc or clang).
 * One thread per client, one keep-alive connection each (reconnects if the server closes it).
 *
 *   recload modify  HOST PORT PATH TOKEN CLIENTS SECONDS BATCH ZONES NAMEPREFIX [TOTAL]
 *       POST PATH (records/modify) with BATCH `create` operations of ~300-byte AppEvent records
 *       (record type from RECLOAD_RECORD_TYPE when set), in NimbusKit's shape: each record
 *       carries its zoneID, as Sources/NimbusKit/Wire/JSONBytes.swift writes it
 *       (RECLOAD_SHAPE=bare: without it, the shape these benches sent before issue #28)
 *       with unique names NAMEPREFIX-<client>-<n>-<i>. ZONES is a comma-separated list of zone
 *       names; each request picks one at random (as pgbench's `random(1, :nzones)`).
 *       With TOTAL > 0 the run ends when TOTAL records were sent (SECONDS is then a time limit).
 *
 *   recload changes HOST PORT PATH TOKEN CLIENTS SECONDS ZONE LIMIT
 *       POST PATH (records/changes): each client starts from no token, follows `syncToken` while
 *       `moreComing`, then starts again from no token; counts pages and records.
 *
 * Prints one line of key=value pairs on stdout:
 *   requests ok_requests records item_errors non200 status_4xx status_5xx sockerr secs
 *   req_per_s records_per_s p50_ms p90_ms p99_ms p999_ms max_ms cpu_s [pages restarts bytes_in]
 * and, on stderr, the first few non-200 answers and socket errors.
 * Only requests completed before the deadline are counted; the rate uses the elapsed time of
 * the counted window. Loopback benchmarking only; bounded in time. HTTP: bench/httpclient.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "httpclient.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ configuration */
static const char *host, *path, *token, *prefix, *zone;
static int port, nclients, batch = 1, limit = 200, modify_mode;
static double seconds;
static long total;            /* modify: stop after this many records (0: run for SECONDS) */
static char **zones;
static int nzones;
static atomic_long sent_records; /* records handed out in TOTAL mode */
static double t_start, t_deadline;
static atomic_int reported;     /* errors printed so far */

typedef struct {
    int id;
    long requests, ok, records, item_errors, non200, s4xx, s5xx, sockerr, pages, restarts;
    double last_done;
    double *lat; size_t nlat, caplat;
    unsigned long long rng;
    http_conn conn;  /* the keep-alive connection, its buffers and the last response's body */
    char *req; size_t reqcap;
} client_t;

static unsigned long long xrand(client_t *c) {  /* xorshift64* */
    c->rng ^= c->rng >> 12; c->rng ^= c->rng << 25; c->rng ^= c->rng >> 27;
    return c->rng * 2685821657736338717ULL;
}

static void report(const char *fmt, const char *a, long b) {
    if (atomic_fetch_add(&reported, 1) < 8) { fprintf(stderr, fmt, a, b); }
}

static long count_occurrences(const char *hay, size_t n, const char *needle) {
    long k = 0; size_t m = strlen(needle);
    const char *p = hay, *e = hay + n;
    while ((p = memmem(p, (size_t)(e - p), needle, m))) { k++; p += m; }
    return k;
}

/* ------------------------------------------------------------------ request bodies */
static size_t build_modify(client_t *c, long seqno, int nrec) {
    const char *z = zones[nzones > 1 ? xrand(c) % (unsigned)nzones : 0];
    const char *rtype = getenv("RECLOAD_RECORD_TYPE") ? getenv("RECLOAD_RECORD_TYPE") : "AppEvent";
    const char *shape = getenv("RECLOAD_SHAPE");
    int bare = shape && strcmp(shape, "bare") == 0;
    size_t need = 256 + (size_t)nrec * (900 + strlen(z));
    char *body = malloc(need);
    size_t n = (size_t)snprintf(body, need, "{\"zoneID\":{\"zoneName\":\"%s\"},\"operations\":[", z);
    for (int i = 0; i < nrec; i++) {
        unsigned long long r = xrand(c);
        long long ts = 1732185600000LL + (long long)(xrand(c) % 31536000000ULL);
        n += (size_t)snprintf(body + n, need - n,
            "%s{\"operationType\":\"create\",\"record\":{\"recordName\":\"%s-%d-%ld-%d\"%s%s%s\"recordType\":\"%s\",\"fields\":{"
            "\"appName\":{\"value\":\"Safari\",\"type\":\"STRING\"},"
            "\"bundleID\":{\"value\":\"com.apple.mobilesafari\",\"type\":\"STRING\"},"
            "\"deviceName\":{\"value\":\"Alice's iPhone 15 Pro\",\"type\":\"STRING\"},"
            "\"timestamp\":{\"value\":%lld,\"type\":\"TIMESTAMP\"},"
            "\"duration\":{\"value\":123.4,\"type\":\"DOUBLE\"},"
            "\"category\":{\"value\":\"productivity\",\"type\":\"STRING\"},"
            "\"osVersion\":{\"value\":\"17.5.1\",\"type\":\"STRING\"},"
            "\"sessionID\":{\"value\":\"%016llx%016llx\",\"type\":\"STRING\"},"
            "\"note\":{\"value\":\"opened from home screen; focus mode off; battery 81%%; network wifi\",\"type\":\"STRING\"}}}}",
            i ? "," : "", prefix, c->id, seqno, i, bare ? "," : ",\"zoneID\":{\"zoneName\":\"", bare ? "" : z, bare ? "" : "\"},",
            rtype, ts, r, xrand(c));
    }
    n += (size_t)snprintf(body + n, need - n, "]}");
    http_grow(&c->req, &c->reqcap, n + 1024);
    size_t h = (size_t)http_post_head(c->req, c->reqcap, path, host, port, token, n);
    memcpy(c->req + h, body, n);
    free(body);
    return h + n;
}

static size_t build_changes(client_t *c, const char *sync_token) {
    char body[2048];
    int n;
    if (sync_token && *sync_token)
        n = snprintf(body, sizeof body, "{\"zoneID\":{\"zoneName\":\"%s\"},\"resultsLimit\":%d,\"syncToken\":\"%s\"}", zone, limit, sync_token);
    else
        n = snprintf(body, sizeof body, "{\"zoneID\":{\"zoneName\":\"%s\"},\"resultsLimit\":%d}", zone, limit);
    http_grow(&c->req, &c->reqcap, (size_t)n + 1024);
    size_t h = (size_t)http_post_head(c->req, c->reqcap, path, host, port, token, (size_t)n);
    memcpy(c->req + h, body, (size_t)n);
    return h + (size_t)n;
}

/* Extracts "key":"value" (string) from JSON text into out; returns 1 if found. */
static int json_string(const char *text, size_t n, const char *key, char *out, size_t cap) {
    char needle[64];
    snprintf(needle, sizeof needle, "\"%s\":", key);
    char *p = memmem(text, n, needle, strlen(needle));
    if (!p) return 0;
    p += strlen(needle);
    while (*p == ' ') p++;
    if (*p != '"') return 0;
    p++;
    size_t k = 0;
    while (*p && *p != '"' && k + 1 < cap) out[k++] = *p++;
    out[k] = 0;
    return 1;
}

/* ------------------------------------------------------------------ client thread */
static pthread_barrier_t barrier;

static void add_latency(client_t *c, double ms) {
    if (c->nlat == c->caplat) {
        c->caplat = c->caplat ? c->caplat * 2 : 65536;
        c->lat = realloc(c->lat, c->caplat * sizeof(double));
        if (!c->lat) { perror("realloc"); exit(2); }
    }
    c->lat[c->nlat++] = ms;
}

static void *run_client(void *arg) {
    client_t *c = arg;
    c->conn.fd = -1;
    char sync_token[1024] = "";
    long seqno = 0;
    pthread_barrier_wait(&barrier);
    for (;;) {
        double t0 = now_s();
        if (t0 >= t_deadline) break;
        int nrec = batch;
        if (modify_mode && total > 0) {
            long got = atomic_fetch_add(&sent_records, batch);
            if (got >= total) break;
            if (got + batch > total) nrec = (int)(total - got);
        }
        if (c->conn.fd < 0) {
            c->conn.fd = http_connect(host, port, 60);
            c->conn.buflen = 0;
            if (c->conn.fd < 0) { c->sockerr++; report("recload: connect failed (%s, client %ld)\n", strerror(errno), c->id); usleep(100000); continue; }
        }
        size_t len = modify_mode ? build_modify(c, seqno++, nrec) : build_changes(c, sync_token);
        int status = http_exchange(&c->conn, c->req, len);  /* closes the connection after a fault or Connection: close */
        if (status < 0) {
            c->sockerr++;
            report("recload: socket error (%s, client %ld)\n", errno ? strerror(errno) : "closed", c->id);
            sync_token[0] = 0;
            continue;
        }
        double t1 = now_s();
        if (t1 > t_deadline && total == 0) break;  /* finished after the window: not counted */
        c->requests++;
        c->last_done = t1;
        add_latency(c, (t1 - t0) * 1e3);
        if (status != 200) {
            c->non200++;
            if (status >= 500) c->s5xx++; else if (status >= 400) c->s4xx++;
            if (atomic_fetch_add(&reported, 1) < 8)
                fprintf(stderr, "recload: HTTP %d: %.300s\n", status, c->conn.body);
            sync_token[0] = 0;
            continue;
        }
        c->ok++;
        if (modify_mode) {
            long errs = count_occurrences(c->conn.body, c->conn.bodylen, "\"serverErrorCode\"");
            if (errs && atomic_fetch_add(&reported, 1) < 8) fprintf(stderr, "recload: item errors: %.300s\n", c->conn.body);
            c->item_errors += errs;
            c->records += nrec - errs;
        } else {
            c->pages++;
            c->records += count_occurrences(c->conn.body, c->conn.bodylen, "\"recordName\"");
            int more = memmem(c->conn.body, c->conn.bodylen, "\"moreComing\":true", 17) != NULL;
            if (more && json_string(c->conn.body, c->conn.bodylen, "syncToken", sync_token, sizeof sync_token)) {
            } else { sync_token[0] = 0; c->restarts++; }
        }
    }
    http_close(&c->conn);
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p) {
    if (!n) return 0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

int main(int argc, char **argv) {
    if (argc < 10) {
        fprintf(stderr, "usage: recload modify HOST PORT PATH TOKEN CLIENTS SECONDS BATCH ZONES NAMEPREFIX [TOTAL]\n"
                        "       recload changes HOST PORT PATH TOKEN CLIENTS SECONDS ZONE LIMIT\n");
        return 64;
    }
    modify_mode = strcmp(argv[1], "modify") == 0;
    if (!modify_mode && strcmp(argv[1], "changes") != 0) { fprintf(stderr, "recload: unknown mode %s\n", argv[1]); return 64; }
    host = argv[2]; port = atoi(argv[3]); path = argv[4]; token = argv[5];
    nclients = atoi(argv[6]); seconds = atof(argv[7]);
    if (modify_mode) {
        if (argc < 11) { fprintf(stderr, "recload modify: missing NAMEPREFIX\n"); return 64; }
        batch = atoi(argv[8]);
        char *list = strdup(argv[9]);
        for (char *s = strtok(list, ","); s; s = strtok(NULL, ",")) {
            zones = realloc(zones, (size_t)(nzones + 1) * sizeof(char *));
            zones[nzones++] = s;
        }
        prefix = argv[10];
        total = argc > 11 ? atol(argv[11]) : 0;
        if (nzones == 0 || batch < 1) { fprintf(stderr, "recload: bad zones or batch\n"); return 64; }
    } else {
        zone = argv[8]; limit = atoi(argv[9]);
    }
    if (nclients < 1 || seconds <= 0) { fprintf(stderr, "recload: bad clients or seconds\n"); return 64; }

    client_t *cs = calloc((size_t)nclients, sizeof(client_t));
    pthread_t *th = calloc((size_t)nclients, sizeof(pthread_t));
    pthread_barrier_init(&barrier, NULL, (unsigned)nclients + 1);
    unsigned long long seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 32);
    for (int i = 0; i < nclients; i++) {
        cs[i].id = i;
        cs[i].rng = (seed + 0x9E3779B97F4A7C15ULL * (unsigned long long)(i + 1)) | 1;
        if (pthread_create(&th[i], NULL, run_client, &cs[i]) != 0) { perror("pthread_create"); return 2; }
    }
    t_start = now_s();
    t_deadline = t_start + seconds;
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < nclients; i++) pthread_join(th[i], NULL);
    double t_end = now_s();

    long requests = 0, ok = 0, records = 0, item_errors = 0, non200 = 0, s4 = 0, s5 = 0, sockerr = 0, pages = 0, restarts = 0;
    long long bytes_in = 0;
    size_t nlat = 0;
    double last = t_start;
    for (int i = 0; i < nclients; i++) {
        requests += cs[i].requests; ok += cs[i].ok; records += cs[i].records; item_errors += cs[i].item_errors;
        non200 += cs[i].non200; s4 += cs[i].s4xx; s5 += cs[i].s5xx; sockerr += cs[i].sockerr;
        pages += cs[i].pages; restarts += cs[i].restarts; bytes_in += cs[i].conn.bytes_in; nlat += cs[i].nlat;
        if (cs[i].last_done > last) last = cs[i].last_done;
    }
    double *all = malloc((nlat ? nlat : 1) * sizeof(double));
    size_t k = 0;
    for (int i = 0; i < nclients; i++) { memcpy(all + k, cs[i].lat, cs[i].nlat * sizeof(double)); k += cs[i].nlat; }
    qsort(all, nlat, sizeof(double), cmp_double);
    double secs = total > 0 ? last - t_start : (t_end < t_deadline ? t_end : t_deadline) - t_start;
    if (secs <= 0) secs = 1e-9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("requests=%ld ok_requests=%ld records=%ld item_errors=%ld non200=%ld status_4xx=%ld status_5xx=%ld sockerr=%ld "
           "secs=%.3f req_per_s=%.1f records_per_s=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f cpu_s=%.3f "
           "pages=%ld restarts=%ld bytes_in=%lld\n",
           requests, ok, records, item_errors, non200, s4, s5, sockerr, secs, requests / secs, records / secs,
           pct(all, nlat, 0.50), pct(all, nlat, 0.90), pct(all, nlat, 0.99), pct(all, nlat, 0.999),
           nlat ? all[nlat - 1] : 0.0, cpu, pages, restarts, bytes_in);
    return 0;
}
