/*
 * pruneload: write load for bench/prune.sh (compiled at run time with cc or clang).
 * CLIENTS threads, one keep-alive connection each (reconnects if the server closes it), each
 * sending records/modify requests with ONE `create` of a BlockedAppEvent (timestamp = now, so
 * never expired) named PREFIX-<client>-<random hex> into ZONE, back to back.
 *
 *   pruneload HOST PORT PATH TOKEN CLIENTS MAX_SECONDS ZONE PREFIX SAMPLES_FILE
 *
 * Runs until SIGTERM, SIGINT or SIGUSR1 (or MAX_SECONDS), then writes one line per completed
 * request to SAMPLES_FILE:  <start, ms since the epoch (CLOCK_REALTIME)> <latency ms> <HTTP
 * status> <item errors>  so that the caller can cut the run into windows by wall-clock time,
 * and prints `requests=N ok=N item_errors=N non200=N sockerr=N secs=S` on stdout.
 * Loopback benchmarking only; bounded in time. HTTP: bench/httpclient.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "httpclient.h"

static const char *host, *path, *token, *zone, *prefix;
static int port, nclients;
static double max_seconds;
static volatile sig_atomic_t stop_requested;
static atomic_int reported;

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long long real_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct { long long start_ms; float latency_ms; short status; short item_errors; } sample_t;

typedef struct {
    int id;
    unsigned long long rng;
    long requests, ok, item_errors, non200, sockerr;
    sample_t *samples; size_t nsamples, capsamples;
    http_conn conn;  /* the keep-alive connection, its buffers and the last response's body */
    char req[4096];
} client_t;

static unsigned long long xrand(client_t *c) {  /* xorshift64* */
    c->rng ^= c->rng >> 12; c->rng ^= c->rng << 25; c->rng ^= c->rng >> 27;
    return c->rng * 2685821657736338717ULL;
}

static size_t build_request(client_t *c) {
    char body[1024];
    int n = snprintf(body, sizeof body,
        "{\"zoneID\":{\"zoneName\":\"%s\"},\"operations\":[{\"operationType\":\"create\",\"record\":{"
        "\"recordName\":\"%s-%d-%016llX\",\"recordType\":\"BlockedAppEvent\",\"fields\":{"
        "\"appName\":{\"value\":\"Safari\"},\"bundleID\":{\"value\":\"com.apple.mobilesafari\"},"
        "\"deviceName\":{\"value\":\"Alice's iPhone 15 Pro\"},\"timestamp\":{\"value\":%lld,\"type\":\"TIMESTAMP\"}}}}]}",
        zone, prefix, c->id, xrand(c), real_ms());
    int h = http_post_head(c->req, sizeof c->req, path, host, port, token, (size_t)n);
    h += snprintf(c->req + h, sizeof c->req - (size_t)h, "%s", body);
    return (size_t)h;
}

static void add_sample(client_t *c, long long start_ms, double ms, int status, int item_errors) {
    if (c->nsamples == c->capsamples) {
        c->capsamples = c->capsamples ? c->capsamples * 2 : 65536;
        c->samples = realloc(c->samples, c->capsamples * sizeof(sample_t));
        if (!c->samples) { perror("realloc"); exit(2); }
    }
    c->samples[c->nsamples++] = (sample_t){start_ms, (float)ms, (short)status, (short)item_errors};
}

static double t_deadline;

static void *run_client(void *arg) {
    client_t *c = arg;
    c->conn.fd = -1;
    while (!stop_requested && mono_s() < t_deadline) {
        if (c->conn.fd < 0) {
            c->conn.fd = http_connect(host, port, 60);
            c->conn.buflen = 0;
            if (c->conn.fd < 0) {
                c->sockerr++;
                if (atomic_fetch_add(&reported, 1) < 8) fprintf(stderr, "pruneload: connect failed: %s\n", strerror(errno));
                usleep(100000);
                continue;
            }
        }
        size_t len = build_request(c);
        long long start_ms = real_ms();
        double t0 = mono_s();
        int status = http_exchange(&c->conn, c->req, len);  /* closes the connection after a fault or Connection: close */
        if (status < 0) {
            c->sockerr++;
            if (atomic_fetch_add(&reported, 1) < 8) fprintf(stderr, "pruneload: socket error: %s\n", errno ? strerror(errno) : "closed");
            continue;
        }
        double ms = (mono_s() - t0) * 1e3;
        int errs = 0;
        if (status == 200 && memmem(c->conn.body, c->conn.bodylen, "\"serverErrorCode\"", 17)) errs = 1;
        if ((status != 200 || errs) && atomic_fetch_add(&reported, 1) < 8)
            fprintf(stderr, "pruneload: HTTP %d: %.300s\n", status, c->conn.body);
        c->requests++;
        if (status == 200 && !errs) c->ok++;
        if (status != 200) c->non200++;
        c->item_errors += errs;
        add_sample(c, start_ms, ms, status, errs);
    }
    http_close(&c->conn);
    return NULL;
}

static void on_signal(int sig) { (void)sig; stop_requested = 1; }

int main(int argc, char **argv) {
    if (argc != 10) {
        fprintf(stderr, "usage: pruneload HOST PORT PATH TOKEN CLIENTS MAX_SECONDS ZONE PREFIX SAMPLES_FILE\n");
        return 64;
    }
    host = argv[1]; port = atoi(argv[2]); path = argv[3]; token = argv[4];
    nclients = atoi(argv[5]); max_seconds = atof(argv[6]); zone = argv[7]; prefix = argv[8];
    const char *samples_file = argv[9];
    if (nclients < 1 || max_seconds <= 0) { fprintf(stderr, "pruneload: bad clients or seconds\n"); return 64; }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;  /* no SA_RESTART: a blocked recv returns EINTR and is retried */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    client_t *clients = calloc((size_t)nclients, sizeof(client_t));
    pthread_t *threads = calloc((size_t)nclients, sizeof(pthread_t));
    double t_start = mono_s();
    t_deadline = t_start + max_seconds;
    /* Worker threads do not take the signals: the main thread does, and they see the flag. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM); sigaddset(&block, SIGINT); sigaddset(&block, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    for (int i = 0; i < nclients; i++) {
        clients[i].id = i;
        clients[i].rng = 0x9E3779B97F4A7C15ULL ^ ((unsigned long long)getpid() << 20) ^ (unsigned long long)(i + 1) * 0xBF58476D1CE4E5B9ULL;
        pthread_create(&threads[i], NULL, run_client, &clients[i]);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    while (!stop_requested && mono_s() < t_deadline) usleep(20000);
    stop_requested = 1;
    for (int i = 0; i < nclients; i++) pthread_join(threads[i], NULL);
    double secs = mono_s() - t_start;

    FILE *out = fopen(samples_file, "w");
    if (!out) { perror(samples_file); return 1; }
    long requests = 0, ok = 0, item_errors = 0, non200 = 0, sockerr = 0;
    for (int i = 0; i < nclients; i++) {
        client_t *c = &clients[i];
        for (size_t k = 0; k < c->nsamples; k++)
            fprintf(out, "%lld %.3f %d %d\n", c->samples[k].start_ms, c->samples[k].latency_ms, c->samples[k].status, c->samples[k].item_errors);
        requests += c->requests; ok += c->ok; item_errors += c->item_errors; non200 += c->non200; sockerr += c->sockerr;
    }
    fclose(out);
    printf("requests=%ld ok=%ld item_errors=%ld non200=%ld sockerr=%ld secs=%.2f\n", requests, ok, item_errors, non200, sockerr, secs);
    return 0;
}
