/* client.c — shakesapp's client simulator: rounds of sequential queries.
 *
 * Each round sends -round_size (default 20) queries, one after another, for
 * words and phrases picked from a fixed list, and prints
 *   Simulated 20 requests in 17.3s, rate of 1.156069 reqs / sec
 * as the classic tutorial's client does. With -duration S it keeps running
 * rounds until S seconds have passed (at least one round), instead of
 * -num_rounds N. -server may be given several times (up to 8 instances):
 * the queries go to each in turn, as a round-robin load balancer sends
 * them (the demo runs two instances of each version, in zones a and b).
 * Exit status 1 if any request fails.
 *
 * usage: shakesapp_client -server URL [-server URL2 ...] [-num_rounds N | -duration S] [-round_size K]
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const queries[] = {
    "love", "to be", "king", "death", "sweet", "the world", "honour", "fool", "night", "heart",
    "forsooth", "what light", "music", "truth", "friend", "time", "gold", "sleep", "blood", "fortune",
};
#define N_QUERIES (sizeof queries / sizeof queries[0])

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p, (void)arg;
    return size * n;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(void)
{
    fprintf(stderr, "usage: shakesapp_client -server URL [-server URL2 ...] [-num_rounds N | -duration S] "
                    "[-round_size K]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *servers[8];
    size_t n_servers = 0;
    int rounds = 1, round_size = 20;
    double duration = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-')
            a++;
        if (i + 1 >= argc)
            usage();
        if (strcmp(a, "-server") == 0) {
            if (n_servers == sizeof servers / sizeof servers[0])
                usage();
            servers[n_servers++] = argv[++i];
        }
        else if (strcmp(a, "-num_rounds") == 0)
            rounds = atoi(argv[++i]);
        else if (strcmp(a, "-duration") == 0)
            duration = atof(argv[++i]);
        else if (strcmp(a, "-round_size") == 0)
            round_size = atoi(argv[++i]);
        else
            usage();
    }
    if (!n_servers || rounds < 1 || round_size < 1 || duration < 0)
        usage();
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        return 1;
    CURL *h = curl_easy_init();
    if (!h)
        return 1;
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
    double start_all = now_s();
    int failed = 0;
    unsigned pick = 1;
    size_t next = 0; /* the instance the next query goes to */
    for (int r = 0; duration > 0 ? (r == 0 || now_s() - start_all < duration) : r < rounds; r++) {
        double t0 = now_s();
        for (int k = 0; k < round_size; k++) {
            pick = pick * 1103515245u + 12345u;
            char *q = curl_easy_escape(h, queries[(pick >> 16) % N_QUERIES], 0);
            char url[1024];
            snprintf(url, sizeof url, "%s/?q=%s", servers[next], q ? q : "love");
            next = (next + 1) % n_servers;
            curl_free(q);
            curl_easy_setopt(h, CURLOPT_URL, url);
            long code = 0;
            CURLcode rc = curl_easy_perform(h);
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
            if (rc != CURLE_OK || code != 200) {
                fprintf(stderr, "shakesapp_client: %s: %s (HTTP %ld)\n", url,
                        rc != CURLE_OK ? curl_easy_strerror(rc) : "bad status", code);
                failed = 1;
            }
        }
        double dt = now_s() - t0;
        printf("Simulated %d requests in %.1fs, rate of %f reqs / sec\n", round_size, dt, round_size / dt);
        fflush(stdout);
    }
    curl_easy_cleanup(h);
    curl_global_cleanup();
    return failed;
}
