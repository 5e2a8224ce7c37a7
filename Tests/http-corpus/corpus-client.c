/*
 * corpus-client: sends the cases of Tests/http-corpus/cases.txt to a running server, byte for
 * byte, and checks each answer (see Tests/http-corpus/README.md for the manifest format).
 *
 *   corpus-client run PORT MANIFEST [NAME...]   run every case (or only the named ones)
 *   corpus-client seeds DIR MANIFEST            write each decoded case to DIR/<name> (fuzz seeds)
 *   corpus-client bodies DIR MANIFEST           the same for what follows the head of every case that
 *                                               mentions "chunked" (seeds for the chunked decoder)
 *   corpus-client count MANIFEST                print "REJECT ACCEPT" case counts
 *
 * For each case, on a fresh connection to 127.0.0.1:PORT:
 *   reject: the first answer has the expected status and Connection: close, and the server then
 *           closes the connection without sending anything else;
 *   accept: the expected answers arrive in order (interim 1xx answers are skipped); when the last
 *           one leaves the connection open, a valid GET /limits on the same connection gets 200.
 * After every case, GET /healthz on a new connection must answer 200. A 500, 502, 503 or 504
 * answer or a failed health check counts as a crash. The last line printed is
 *   "N/N rejected with the expected status, M/M accepted, C crashes"
 * and the exit status is 0 only when every case passed and nothing crashed.
 *
 * Plain C99 + POSIX sockets, so it builds with the cc of a fresh machine at test time.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_STATUSES 8
#define ANSWER_TIMEOUT_MS 10000
#define CLOSE_TIMEOUT_MS 5000

typedef struct {
    unsigned char *data;
    size_t length, capacity;
} Bytes;

static void bytes_append(Bytes *b, const void *data, size_t length) {
    if (b->length + length + 1 > b->capacity) {
        size_t capacity = b->capacity ? b->capacity * 2 : 256;
        while (capacity < b->length + length + 1) capacity *= 2;
        b->data = realloc(b->data, capacity);
        if (!b->data) { perror("realloc"); exit(2); }
        b->capacity = capacity;
    }
    memcpy(b->data + b->length, data, length);
    b->length += length;
    b->data[b->length] = 0;
}

static void bytes_byte(Bytes *b, unsigned char c) { bytes_append(b, &c, 1); }

typedef struct {
    int line;
    int reject;                     /* 1: reject, 0: accept */
    int status_count;
    int statuses[MAX_STATUSES];
    int head_only[MAX_STATUSES];    /* the answer to a HEAD request: no body */
    char name[128];
    Bytes bytes;
} Case;

/* MARK: - Manifest */

static int hex_value(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes text[*i..end) into out until `stop` (0: the end) is met unescaped; returns 0 or -1. */
static int decode(const char *text, size_t *i, size_t end, char stop, Bytes *out, char *error, size_t error_size) {
    while (*i < end) {
        char c = text[*i];
        if (stop && c == stop) return 0;
        if (c != '\\') { bytes_byte(out, (unsigned char)c); (*i)++; continue; }
        if (*i + 1 >= end) { snprintf(error, error_size, "a backslash ends the line"); return -1; }
        char e = text[*i + 1];
        *i += 2;
        switch (e) {
        case 'r': bytes_byte(out, '\r'); break;
        case 'n': bytes_byte(out, '\n'); break;
        case 't': bytes_byte(out, '\t'); break;
        case '0': bytes_byte(out, 0); break;
        case '\\': bytes_byte(out, '\\'); break;
        case 'x': {
            int hi = *i < end ? hex_value(text[*i]) : -1, lo = *i + 1 < end ? hex_value(text[*i + 1]) : -1;
            if (hi < 0 || lo < 0) { snprintf(error, error_size, "\\x needs two hex digits"); return -1; }
            bytes_byte(out, (unsigned char)(hi * 16 + lo));
            *i += 2;
            break;
        }
        case '[': {
            /* \[COUNT|TEXT]: TEXT (escapes decoded) COUNT times. */
            long count = 0;
            while (*i < end && text[*i] >= '0' && text[*i] <= '9') count = count * 10 + (text[(*i)++] - '0');
            if (*i >= end || text[*i] != '|' || count <= 0 || count > 10000000) {
                snprintf(error, error_size, "\\[ needs COUNT|TEXT]");
                return -1;
            }
            (*i)++;
            Bytes unit = {0};
            if (decode(text, i, end, ']', &unit, error, error_size) != 0) return -1;
            if (*i >= end) { snprintf(error, error_size, "\\[ without its closing ]"); return -1; }
            (*i)++;
            for (long n = 0; n < count; n++) bytes_append(out, unit.data ? unit.data : (unsigned char *)"", unit.length);
            free(unit.data);
            break;
        }
        default:
            snprintf(error, error_size, "unknown escape \\%c", e);
            return -1;
        }
    }
    return 0;
}

static size_t skip_blank(const char *s, size_t i, size_t end) {
    while (i < end && (s[i] == ' ' || s[i] == '\t')) i++;
    return i;
}

static size_t word_end(const char *s, size_t i, size_t end) {
    while (i < end && s[i] != ' ' && s[i] != '\t') i++;
    return i;
}

/* Reads the manifest; exits with status 2 on a malformed line. */
static Case *load_manifest(const char *path, int *count) {
    FILE *file = fopen(path, "rb");
    if (!file) { perror(path); exit(2); }
    Case *cases = NULL;
    int capacity = 0;
    *count = 0;
    char *line = NULL;
    size_t line_capacity = 0;
    ssize_t read_length;
    int number = 0;
    while ((read_length = getline(&line, &line_capacity, file)) >= 0) {
        number++;
        size_t end = (size_t)read_length;
        while (end > 0 && (line[end - 1] == '\n' || line[end - 1] == '\r' || line[end - 1] == ' ' || line[end - 1] == '\t')) end--;
        size_t i = skip_blank(line, 0, end);
        if (i == end || line[i] == '#') continue;
        if (*count == capacity) {
            capacity = capacity ? capacity * 2 : 64;
            cases = realloc(cases, sizeof(Case) * (size_t)capacity);
            if (!cases) { perror("realloc"); exit(2); }
        }
        Case *c = &cases[*count];
        memset(c, 0, sizeof *c);
        c->line = number;
        size_t kind_end = word_end(line, i, end);
        if (kind_end - i == 6 && strncmp(line + i, "reject", 6) == 0) c->reject = 1;
        else if (kind_end - i == 6 && strncmp(line + i, "accept", 6) == 0) c->reject = 0;
        else { fprintf(stderr, "%s:%d: the kind must be reject or accept\n", path, number); exit(2); }
        i = skip_blank(line, kind_end, end);
        size_t status_end = word_end(line, i, end);
        while (i < status_end) {
            if (c->status_count == MAX_STATUSES) { fprintf(stderr, "%s:%d: too many statuses\n", path, number); exit(2); }
            int head = 0;
            if (line[i] == 'H') { head = 1; i++; }
            int status = 0, digits = 0;
            while (i < status_end && line[i] >= '0' && line[i] <= '9') { status = status * 10 + (line[i++] - '0'); digits++; }
            if (digits != 3 || (i < status_end && line[i] != ',')) {
                fprintf(stderr, "%s:%d: statuses are 3-digit codes separated by commas\n", path, number);
                exit(2);
            }
            c->head_only[c->status_count] = head;
            c->statuses[c->status_count++] = status;
            if (i < status_end) i++;
        }
        if (c->status_count == 0 || (c->reject && c->status_count != 1)) {
            fprintf(stderr, "%s:%d: a reject case has exactly one status, an accept case at least one\n", path, number);
            exit(2);
        }
        i = skip_blank(line, status_end, end);
        size_t name_end = word_end(line, i, end);
        if (name_end == i || name_end - i >= sizeof c->name) { fprintf(stderr, "%s:%d: missing or long name\n", path, number); exit(2); }
        memcpy(c->name, line + i, name_end - i);
        for (int k = 0; k < *count; k++) {
            if (strcmp(cases[k].name, c->name) == 0) { fprintf(stderr, "%s:%d: duplicate name %s\n", path, number, c->name); exit(2); }
        }
        i = skip_blank(line, name_end, end);
        if (i == end) { fprintf(stderr, "%s:%d: no bytes\n", path, number); exit(2); }
        char error[128];
        if (decode(line, &i, end, 0, &c->bytes, error, sizeof error) != 0) {
            fprintf(stderr, "%s:%d: %s\n", path, number, error);
            exit(2);
        }
        (*count)++;
    }
    free(line);
    fclose(file);
    return cases;
}

/* MARK: - Sockets */

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in address = {0};
    address.sin_family = AF_INET;
    address.sin_port = htons((unsigned short)port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) { close(fd); return -1; }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval timeout = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    return fd;
}

/* Sends everything; a peer that closed early is not an error here (its answer is read next). */
static void send_all(int fd, const unsigned char *data, size_t length) {
    size_t sent = 0;
    while (sent < length) {
        ssize_t n = send(fd, data + sent, length - sent, MSG_NOSIGNAL);
        if (n > 0) { sent += (size_t)n; continue; }
        if (n < 0 && errno == EINTR) continue;
        return;
    }
}

typedef struct {
    int fd;
    Bytes in;
    size_t offset;   /* start of the unparsed input */
    int closed;      /* EOF or reset seen */
} Connection;

/* Reads more input before `deadline`; returns 1 when bytes came, 0 on close, -1 on timeout. */
static int read_more(Connection *c, long long deadline) {
    if (c->closed) return 0;
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) return -1;
        struct pollfd p = {c->fd, POLLIN, 0};
        int ready = poll(&p, 1, (int)left);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return -1;
        unsigned char buffer[65536];
        ssize_t n = recv(c->fd, buffer, sizeof buffer, 0);
        if (n > 0) { bytes_append(&c->in, buffer, (size_t)n); return 1; }
        if (n < 0 && errno == EINTR) continue;
        c->closed = 1;
        return 0;
    }
}

typedef struct {
    int status;
    int close;       /* Connection: close */
    char reason[160];
} Answer;

static const unsigned char *find(const unsigned char *haystack, size_t length, const char *needle) {
    size_t n = strlen(needle);
    if (n > length) return NULL;
    for (size_t i = 0; i + n <= length; i++) if (memcmp(haystack + i, needle, n) == 0) return haystack + i;
    return NULL;
}

/* The value of header `name` (case-insensitive) in the head [start, end), copied into out. */
static int header(const unsigned char *start, const unsigned char *end, const char *name, char *out, size_t size) {
    size_t n = strlen(name);
    const unsigned char *line = start;
    while (line < end) {
        const unsigned char *eol = find(line, (size_t)(end - line), "\r\n");
        if (!eol) eol = end;
        if ((size_t)(eol - line) > n && line[n] == ':' && strncasecmp((const char *)line, name, n) == 0) {
            const unsigned char *v = line + n + 1;
            while (v < eol && (*v == ' ' || *v == '\t')) v++;
            size_t length = (size_t)(eol - v) < size - 1 ? (size_t)(eol - v) : size - 1;
            memcpy(out, v, length);
            out[length] = 0;
            return 1;
        }
        line = eol + 2;
    }
    return 0;
}

/*
 * Reads one final answer (1xx interim answers are skipped) before `deadline`. Returns 1 with
 * `answer` filled, 0 when the connection closed first, -1 on timeout, -2 on a malformed answer.
 */
static int read_answer(Connection *c, int head_only, long long deadline, Answer *answer) {
    for (;;) {
        const unsigned char *base = c->in.data ? c->in.data + c->offset : NULL;
        size_t available = c->in.length - c->offset;
        const unsigned char *end = base ? find(base, available, "\r\n\r\n") : NULL;
        if (!end) {
            int more = read_more(c, deadline);
            if (more <= 0) return more;
            continue;
        }
        size_t head_length = (size_t)(end - base) + 4;
        if (available < 12 || memcmp(base, "HTTP/1.", 7) != 0 || base[8] != ' ') return -2;
        int status = atoi((const char *)base + 9);
        memset(answer, 0, sizeof *answer);
        answer->status = status;
        char value[128];
        if (header(base, end, "Connection", value, sizeof value) && strcasestr(value, "close")) answer->close = 1;
        size_t body = 0;
        int chunked = header(base, end, "Transfer-Encoding", value, sizeof value) && strcasestr(value, "chunked");
        if (header(base, end, "Content-Length", value, sizeof value)) body = (size_t)strtoull(value, NULL, 10);
        if (head_only || status < 200 || status == 204 || status == 304) { body = 0; chunked = 0; }
        if (chunked) {
            /* Our server frames small answers by length; a chunked one is read up to its last chunk. */
            const unsigned char *last;
            while (!(last = find(c->in.data + c->offset + head_length, c->in.length - c->offset - head_length, "\r\n0\r\n\r\n"))) {
                int more = read_more(c, deadline);
                if (more <= 0) return more == 0 ? -2 : more;
            }
            body = (size_t)(last - (c->in.data + c->offset + head_length)) + 7;
        } else {
            while (c->in.length - c->offset < head_length + body) {
                int more = read_more(c, deadline);
                if (more <= 0) return more == 0 ? -2 : more;
            }
        }
        base = c->in.data + c->offset;
        const unsigned char *reason = find(base + head_length, body, "\"reason\":\"");
        if (reason) {
            reason += 10;
            size_t k = 0;
            while (reason + k < base + head_length + body && reason[k] != '"' && k < sizeof answer->reason - 1) k++;
            memcpy(answer->reason, reason, k);
            answer->reason[k] = 0;
        }
        c->offset += head_length + body;
        if (status >= 100 && status < 200) continue;
        return 1;
    }
}

/* Waits for the server to close; returns 1 when it closed with nothing more sent, else 0. */
static int expect_closed(Connection *c, char *why, size_t size) {
    long long deadline = now_ms() + CLOSE_TIMEOUT_MS;
    while (!c->closed) {
        int more = read_more(c, deadline);
        if (more < 0) { snprintf(why, size, "the connection stayed open after Connection: close"); return 0; }
    }
    if (c->in.length > c->offset) {
        snprintf(why, size, "%zu more bytes after the answer", c->in.length - c->offset);
        return 0;
    }
    return 1;
}

static int is_crash_status(int status) { return status == 500 || status == 502 || status == 503 || status == 504; }

static const char *outcome_text(int result) {
    return result == 0 ? "the connection closed without an answer" : result == -1 ? "no answer in time" : "a malformed answer";
}

/* MARK: - Cases */

static int crashes = 0;

static int check_health(int port, char *why, size_t size) {
    static const char request[] = "GET /healthz HTTP/1.1\r\nHost: corpus\r\nConnection: close\r\n\r\n";
    Connection c = {connect_to(port), {0}, 0, 0};
    if (c.fd < 0) { snprintf(why, size, "health check: cannot connect (%s)", strerror(errno)); return 0; }
    send_all(c.fd, (const unsigned char *)request, sizeof request - 1);
    Answer answer;
    int result = read_answer(&c, 0, now_ms() + ANSWER_TIMEOUT_MS, &answer);
    close(c.fd);
    free(c.in.data);
    if (result != 1) { snprintf(why, size, "health check: %s", outcome_text(result)); return 0; }
    if (answer.status != 200) { snprintf(why, size, "health check answered %d", answer.status); return 0; }
    return 1;
}

/* Runs one case; returns 1 when it passed. */
static int run_case(int port, const Case *k, char *why, size_t size) {
    Connection c = {connect_to(port), {0}, 0, 0};
    if (c.fd < 0) { snprintf(why, size, "cannot connect (%s)", strerror(errno)); crashes++; return 0; }
    send_all(c.fd, k->bytes.data, k->bytes.length);
    int passed = 1;
    long long deadline = now_ms() + ANSWER_TIMEOUT_MS;
    Answer answer = {0};
    for (int n = 0; n < k->status_count && passed; n++) {
        int result = read_answer(&c, k->head_only[n], deadline, &answer);
        if (result != 1) {
            snprintf(why, size, "answer %d of %d: %s (expected %d)", n + 1, k->status_count, outcome_text(result), k->statuses[n]);
            passed = 0;
        } else if (answer.status != k->statuses[n]) {
            if (is_crash_status(answer.status)) crashes++;
            snprintf(why, size, "answer %d: status %d, expected %d (%s)", n + 1, answer.status, k->statuses[n], answer.reason);
            passed = 0;
        } else if (n + 1 < k->status_count && answer.close) {
            snprintf(why, size, "answer %d closed the connection before the pipelined rest", n + 1);
            passed = 0;
        }
    }
    if (passed && k->reject) {
        if (!answer.close) { snprintf(why, size, "the %d answer lacks Connection: close", answer.status); passed = 0; }
        else passed = expect_closed(&c, why, size);
    } else if (passed) {
        if (answer.close) {
            passed = expect_closed(&c, why, size);
        } else {
            static const char next[] = "GET /limits HTTP/1.1\r\nHost: corpus\r\n\r\n";
            send_all(c.fd, (const unsigned char *)next, sizeof next - 1);
            int result = read_answer(&c, 0, now_ms() + ANSWER_TIMEOUT_MS, &answer);
            if (result != 1) { snprintf(why, size, "the request after it: %s", outcome_text(result)); passed = 0; }
            else if (answer.status != 200) {
                if (is_crash_status(answer.status)) crashes++;
                snprintf(why, size, "the request after it answered %d (%s)", answer.status, answer.reason);
                passed = 0;
            }
        }
    }
    close(c.fd);
    free(c.in.data);
    char health[200];
    if (!check_health(port, health, sizeof health)) {
        crashes++;
        if (passed) snprintf(why, size, "%s", health);
        else strncat(why, "; ", size - strlen(why) - 1), strncat(why, health, size - strlen(why) - 1);
        passed = 0;
    }
    return passed;
}

static int run(int port, const char *manifest, char **names, int name_count) {
    int count;
    Case *cases = load_manifest(manifest, &count);
    int rejects = 0, rejected = 0, accepts = 0, accepted = 0;
    for (int n = 0; n < count; n++) {
        const Case *k = &cases[n];
        if (name_count > 0) {
            int wanted = 0;
            for (int m = 0; m < name_count; m++) if (strcmp(names[m], k->name) == 0) wanted = 1;
            if (!wanted) continue;
        }
        char why[400] = "";
        int passed = run_case(port, k, why, sizeof why);
        if (k->reject) { rejects++; rejected += passed; } else { accepts++; accepted += passed; }
        char statuses[64] = "";
        for (int s = 0; s < k->status_count; s++) {
            snprintf(statuses + strlen(statuses), sizeof statuses - strlen(statuses), "%s%d", s ? "," : "", k->statuses[s]);
        }
        if (passed) printf("ok - %s %s %s\n", k->reject ? "reject" : "accept", statuses, k->name);
        else printf("FAIL - %s %s %s (line %d): %s\n", k->reject ? "reject" : "accept", statuses, k->name, k->line, why);
        fflush(stdout);
    }
    printf("%d/%d rejected with the expected status, %d/%d accepted, %d crashes\n", rejected, rejects, accepted, accepts, crashes);
    return rejected == rejects && accepted == accepts && crashes == 0 ? 0 : 1;
}

static int write_seeds(const char *directory, const char *manifest, int bodies) {
    int count, written = 0;
    Case *cases = load_manifest(manifest, &count);
    mkdir(directory, 0755);
    for (int n = 0; n < count; n++) {
        const unsigned char *data = cases[n].bytes.data ? cases[n].bytes.data : (const unsigned char *)"";
        size_t length = cases[n].bytes.length;
        if (bodies) {
            const unsigned char *end = find(data, length, "\r\n\r\n");
            if (!end || !strcasestr((const char *)data, "chunked")) continue;
            length -= (size_t)(end + 4 - data);
            data = end + 4;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", directory, cases[n].name);
        FILE *file = fopen(path, "wb");
        if (!file) { perror(path); return 2; }
        if (length) fwrite(data, 1, length, file);
        fclose(file);
        written++;
    }
    printf("%d seeds in %s\n", written, directory);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "run") == 0) return run(atoi(argv[2]), argv[3], argv + 4, argc - 4);
    if (argc == 4 && strcmp(argv[1], "seeds") == 0) return write_seeds(argv[2], argv[3], 0);
    if (argc == 4 && strcmp(argv[1], "bodies") == 0) return write_seeds(argv[2], argv[3], 1);
    if (argc == 3 && strcmp(argv[1], "count") == 0) {
        int count, rejects = 0;
        Case *cases = load_manifest(argv[2], &count);
        for (int n = 0; n < count; n++) rejects += cases[n].reject;
        printf("%d %d\n", rejects, count - rejects);
        return 0;
    }
    fprintf(stderr, "usage: %s run PORT MANIFEST [NAME...] | seeds DIR MANIFEST | bodies DIR MANIFEST | count MANIFEST\n", argv[0]);
    return 2;
}
