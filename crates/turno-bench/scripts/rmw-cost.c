// The price of one uncontended lock-prefixed read-modify-write on this
// machine against a plain load and store of the same byte, each in a
// dependent chain (each operation reads what the last one wrote), as a
// message's run-state word sees them: what BENCHMARKS.md's "The local
// scheduler" and its records in bench/runs/ price a message's read-modify-writes by.
//
//   gcc -O2 -o /tmp/rmw-cost crates/turno-bench/scripts/rmw-cost.c && nice -n -15 /tmp/rmw-cost
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static volatile uint8_t word;

int main(void) {
  const long n = 200000000;
  uint8_t v = 0;
  double t0 = now();
  for (long i = 0; i < n; i++) {
    uint8_t expected = (uint8_t)(i & 1);
    __atomic_compare_exchange_n(&word, &expected, (uint8_t)(expected ^ 1), 0,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  }
  double t1 = now();
  printf("lock cmpxchg (a claim, a release): %.2f ns\n", (t1 - t0) / n * 1e9);
  t0 = now();
  for (long i = 0; i < n; i++) __atomic_fetch_or(&word, (uint8_t)1, __ATOMIC_ACQ_REL);
  t1 = now();
  printf("lock or (a mark): %.2f ns\n", (t1 - t0) / n * 1e9);
  t0 = now();
  for (long i = 0; i < n; i++) {
    v = word;
    word = (uint8_t)(v ^ 1);
  }
  t1 = now();
  printf("plain load and store: %.2f ns\n", (t1 - t0) / n * 1e9);
  t0 = now();
  for (long i = 0; i < n; i++) {
    word = (uint8_t)i;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    v += word;
  }
  t1 = now();
  printf("store, SeqCst fence, load: %.2f ns\n", (t1 - t0) / n * 1e9);
  return v == 7;
}
