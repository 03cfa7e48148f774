// Reading NCCLSIM_* environment variables. A bad value never stops a job: it is reported once on
// stderr, naming the variable, and the default is used instead.
#pragma once

#include <string>

namespace ncclsim {

// Value of env var `name` as a number in [lo, hi]; `def` when unset. Thread-safe.
double envDouble(const char* name, double def, double lo, double hi);

// Value of env var `name` as an integer in [lo, hi]; `def` when unset. Thread-safe.
long envLong(const char* name, long def, long lo, long hi);

// Value of env var `name` if it is non-empty and only [A-Za-z0-9_.-]; `def` otherwise (a bad
// value warns once). Thread-safe.
std::string envToken(const char* name, const char* def);

// Prints "ncclsim: warning: <what>" once per `key` for the life of the process. Thread-safe.
void warnOnce(const std::string& key, const std::string& what);

}  // namespace ncclsim
