// Assertion for code running in a forked rank: reports the failed condition with the rank and
// returns exit code 1 from the rank function.
#pragma once

#include "tests/sim/emulator/rank_harness.h"

#define RANK_CHECK(rank, cond)                                                                     \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      ::ncclsim_test::rankReport("rank %d line %d: check failed: %s", int(rank), __LINE__, #cond); \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
