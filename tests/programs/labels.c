/* labels.c — a program linked with -lhotspur that profiles itself through
 * the public API, with no environment: hotspur_start, thread names
 * (pthread_setname_np), per-request labels (hotspur_set_label /
 * hotspur_clear_labels) and hotspur_dump, for the label test
 * (tests/integration/services_labels.sh).
 *   labels OUT ROUNDS [wall]
 * Two threads, "alpha" and "beta", each run ROUNDS rounds of: request
 * "checkout" (handle_checkout, 10 ms CPU), request "search" (handle_search,
 * 10 ms CPU), then unlabelled work in between_requests (5 ms CPU). alpha's
 * requests run under alpha_loop, beta's under beta_loop. With "wall" the wall
 * profile is enabled too (100 Hz). Then hotspur_dump(OUT) and exit; prints
 * "dumped OUT" or the failing call's error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "burn.h"
#include "hotspur/hotspur.h"

static int rounds;

HS_BURN(handle_checkout, CLOCK_THREAD_CPUTIME_ID)
HS_BURN(handle_search, CLOCK_THREAD_CPUTIME_ID)
HS_BURN(between_requests, CLOCK_THREAD_CPUTIME_ID)

static int check(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "labels: %s: %s\n", what, strerror(errno));
        exit(1);
    }
    return rc;
}

static void serve(void)
{
    for (int i = 0; i < rounds; i++) {
        check(hotspur_set_label("request", "checkout"), "hotspur_set_label");
        handle_checkout(10);
        check(hotspur_set_label("request", "search"), "hotspur_set_label");
        handle_search(10);
        check(hotspur_clear_labels(), "hotspur_clear_labels");
        between_requests(5);
    }
}

__attribute__((noinline)) void alpha_loop(void)
{
    serve();
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void beta_loop(void)
{
    serve();
    __asm__ volatile("" ::: "memory");
}

static void *run(void *arg)
{
    const char *name = arg;
    pthread_setname_np(pthread_self(), name);
    if (strcmp(name, "alpha") == 0)
        alpha_loop();
    else
        beta_loop();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4 || (rounds = atoi(argv[2])) < 1 ||
        (argc == 4 && strcmp(argv[3], "wall") != 0)) {
        fprintf(stderr, "usage: labels OUT ROUNDS [wall]\n");
        return 2;
    }
    hotspur_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = argv[1];
    cfg.wall_hz = argc == 4 ? 100 : 0;
    check(hotspur_start(&cfg), "hotspur_start");
    pthread_t a, b;
    if (pthread_create(&a, NULL, run, "alpha") != 0 || pthread_create(&b, NULL, run, "beta") != 0)
        return 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    check(hotspur_dump(argv[1]), "hotspur_dump");
    printf("dumped %s\n", argv[1]);
    return 0;
}
