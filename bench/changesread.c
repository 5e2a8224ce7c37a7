/*
 * changesread: the byte-counting reader of bench/client.sh's first sync (compiled at run time
 * with -lcurl). Pages through records/changes of one zone from no token with libcurl (one easy
 * handle: one keep-alive connection), `resultsLimit` LIMIT, following `syncToken` while
 * `moreComing` is true; parses no JSON: it finds the two keys by their bytes and counts the
 * records by their opening `{"recordName":"`. What is left of the time is the server and the
 * loopback: the ceiling of any client.
 *
 *   changesread URL TOKEN ZONE LIMIT SECONDS
 *
 * Prints `result curl-fetch records=N pages=P bytes=B seconds=S per_second=R`; exits 1 on a
 * non-200 answer, a transport error, an answer without syncToken, or after SECONDS.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { char *data; size_t len, cap; } buffer_t;

static size_t collect(char *ptr, size_t size, size_t n, void *userdata) {
    buffer_t *b = userdata;
    size_t add = size * n;
    if (b->len + add + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 20;
        while (cap < b->len + add + 1) cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) return 0;
        b->data = grown, b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, add);
    b->len += add;
    b->data[b->len] = 0;
    return add;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long count(const char *hay, size_t len, const char *needle) {
    long n = 0;
    size_t k = strlen(needle);
    for (const char *p = hay; (p = memmem(p, len - (p - hay), needle, k)); p += k) n++;
    return n;
}

int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: changesread URL TOKEN ZONE LIMIT SECONDS\n"); return 64; }
    const char *url = argv[1], *zone = argv[3];
    int limit = atoi(argv[4]);
    double seconds = atof(argv[5]);
    char auth[1024], body[2048], token[1024] = "";
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", argv[2]);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *curl = curl_easy_init();
    struct curl_slist *headers = curl_slist_append(NULL, auth);
    headers = curl_slist_append(headers, "Content-Type: application/json");
    buffer_t answer = {0};
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
    long records = 0, pages = 0;
    double bytes = 0, start = now_s();
    for (;;) {
        if (token[0]) snprintf(body, sizeof body, "{\"zoneID\":{\"zoneName\":\"%s\"},\"resultsLimit\":%d,\"syncToken\":\"%s\"}", zone, limit, token);
        else snprintf(body, sizeof body, "{\"zoneID\":{\"zoneName\":\"%s\"},\"resultsLimit\":%d}", zone, limit);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        answer.len = 0;
        CURLcode rc = curl_easy_perform(curl);
        long status = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        if (rc != CURLE_OK || status != 200) {
            fprintf(stderr, "changesread: page %ld: %s, HTTP %ld: %.300s\n", pages + 1, curl_easy_strerror(rc), status, answer.data ? answer.data : "");
            return 1;
        }
        pages++;
        bytes += answer.len;
        records += count(answer.data, answer.len, "{\"recordName\":\"");
        const char *t = memmem(answer.data, answer.len, "\"syncToken\":\"", 13);
        if (!t) { fprintf(stderr, "changesread: page %ld has no syncToken: %.300s\n", pages, answer.data); return 1; }
        t += 13;
        const char *end = memchr(t, '"', answer.len - (t - answer.data));
        if (!end || (size_t)(end - t) >= sizeof token) { fprintf(stderr, "changesread: bad syncToken on page %ld\n", pages); return 1; }
        memcpy(token, t, end - t);
        token[end - t] = 0;
        if (!memmem(answer.data, answer.len, "\"moreComing\":true", 17)) break;
        if (now_s() - start > seconds) { fprintf(stderr, "changesread: over %.0f s after %ld pages\n", seconds, pages); return 1; }
    }
    double secs = now_s() - start;
    printf("result curl-fetch records=%ld pages=%ld bytes=%.0f seconds=%.3f per_second=%.1f\n", records, pages, bytes, secs, records / secs);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    free(answer.data);
    return 0;
}
