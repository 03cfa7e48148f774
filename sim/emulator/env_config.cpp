#include "sim/emulator/env_config.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

namespace ncclsim {

void warnOnce(const std::string& key, const std::string& what) {
  // Leaked on purpose: warnings may be issued from stream workers while the process exits.
  static std::mutex* mu = new std::mutex;
  static std::set<std::string>* seen = new std::set<std::string>;
  std::lock_guard<std::mutex> lock(*mu);
  if (!seen->insert(key).second) return;
  std::fprintf(stderr, "ncclsim: warning: %s\n", what.c_str());
}

static void warnBadValue(const char* name, const char* value, const std::string& def) {
  warnOnce(name,
           std::string("ignoring invalid ") + name + "='" + value + "', using default " + def);
}

double envDouble(const char* name, double def, double lo, double hi) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return def;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) {
    warnBadValue(name, s, std::to_string(def));
    return def;
  }
  return v;
}

long envLong(const char* name, long def, long lo, long hi) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return def;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
    warnBadValue(name, s, std::to_string(def));
    return def;
  }
  return v;
}

std::string envToken(const char* name, const char* def) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return def;
  for (const char* p = s; *p; ++p) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) {
      warnBadValue(name, s, def);
      return def;
    }
  }
  return s;
}

}  // namespace ncclsim
