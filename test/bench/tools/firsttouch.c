// Scenario 5's bound: what a first write to a fresh page costs on this machine, five ways of asking for 1 GiB of
// anonymous memory: a byte written to each page, madvise(MADV_POPULATE_WRITE), mmap(MAP_POPULATE), read(2)
// from /dev/zero into it, and a byte written to each page of a range given to transparent huge pages
// (madvise(MADV_HUGEPAGE), aligned to 2 MiB; with /sys/kernel/mm/transparent_hugepage/enabled at madvise or always).
// Ballast first, so that the machine has as much memory in use as the members' process
// holds in a cold sync of 1M pods (~6 GB). If asking the kernel to populate a range were much cheaper per page than
// faulting each page, a native helper could make the cache's slabs resident for less; on this VM it is not.
//
//   gcc -O2 -o /tmp/firsttouch test/bench/tools/firsttouch.c && /tmp/firsttouch <ballast GiB> <rounds>

#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 // Linux 5.14
#endif

#define GIB (1UL << 30)
#define PAGE 4096UL
#define CHUNK (64UL << 20)

static double seconds(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

#define HUGE (2UL << 20)

static char *mapped(size_t len, int flags) {
  char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  return p;
}

static char *fresh(int flags) { return mapped(GIB, flags); }

static void touch(char *p) {
  for (size_t o = 0; o < GIB; o += PAGE) p[o] = 1;
}

static char *populated(int way) {
  switch (way) {
  case 0: {
    char *p = fresh(0);
    touch(p);
    return p;
  }
  case 1: {
    char *p = fresh(0);
    if (madvise(p, GIB, MADV_POPULATE_WRITE) != 0) perror("madvise(MADV_POPULATE_WRITE)");
    return p;
  }
  case 2:
    return fresh(MAP_POPULATE);
  case 4: {
    // 1 GiB plus room to start on a 2 MiB boundary, so that every huge page of the range can be one.
    char *raw = mapped(GIB + HUGE, 0);
    char *p = (char *)(((unsigned long)raw + HUGE - 1) & ~(HUGE - 1));
    if (madvise(p, GIB, MADV_HUGEPAGE) != 0) perror("madvise(MADV_HUGEPAGE)");
    touch(p);
    return p;
  }
  default: {
    char *p = fresh(0);
    int fd = open("/dev/zero", O_RDONLY);
    for (size_t o = 0; o < GIB; o += CHUNK)
      if (read(fd, p + o, CHUNK) != (ssize_t)CHUNK) perror("read /dev/zero");
    close(fd);
    return p;
  }
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s <ballast GiB> <rounds>\n", argv[0]);
    return 2;
  }
  int ballast = atoi(argv[1]), rounds = atoi(argv[2]);
  for (int i = 0; i < ballast; i++) touch(fresh(0));
  printf("ballast: %d GiB in use\n", ballast);
  static const char *ways[] = {"touch", "madvise_populate_write", "map_populate", "read_dev_zero", "touch_madv_hugepage"};
  const double pages = GIB / PAGE;
  for (int r = 0; r < rounds; r++) {
    for (int way = 0; way < 5; way++) {
      double t0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
      char *p = populated(way);
      double t1 = seconds(CLOCK_MONOTONIC), c1 = seconds(CLOCK_PROCESS_CPUTIME_ID);
      // Then filled, as the cache's copies fill a slab: near memset's speed once the pages are resident.
      memset(p, 2, GIB);
      double t2 = seconds(CLOCK_MONOTONIC);
      printf("round %d %-22s %6.2f us a page (CPU %6.2f), filling it after: %.3f s\n", r, ways[way], (t1 - t0) / pages * 1e6, (c1 - c0) / pages * 1e6, t2 - t1);
      fflush(stdout);
    }
  }
  return 0;
}
