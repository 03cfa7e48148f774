// Assertions for code running in a forked rank: report the failed condition (with the rank, for
// RANK_CHECK) and return exit code 1 from the rank function.
#pragma once

#include "tests/sim/emulator/rank_harness.h"

#define RANK_CHECK(rank, cond)                                                                     \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      ::ncclsim_test::rankReport("rank %d line %d: check failed: %s", int(rank), __LINE__, #cond); \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

#define CHILD_CHECK(cond)                                                       \
  do {                                                                          \
    if (!(cond)) {                                                              \
      ::ncclsim_test::rankReport("line %d: check failed: %s", __LINE__, #cond); \
      return 1;                                                                 \
    }                                                                           \
  } while (0)
