// Runs a fuzz target without libFuzzer (gcc builds, CI): each seed as is, then a fixed number of
// deterministic mutations of it (bit flips, byte stores, word stores of boundary values,
// truncation). Usage: <target> SEED_FILE... [--iterations N]
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional: a target may provide seeds generated in memory (no files needed).
extern "C" __attribute__((weak)) void FuzzSeeds(std::vector<std::string>* seeds);

namespace {

void Mutate(std::string& s, std::mt19937_64& rng) {
  if (s.empty()) return;
  std::uniform_int_distribution<size_t> pos(0, s.size() - 1);
  switch (rng() % 4) {
    case 0:
      s[pos(rng)] ^= static_cast<char>(1u << (rng() % 8));
      break;
    case 1:
      s[pos(rng)] = static_cast<char>(rng());
      break;
    case 2: {
      // Header fields are 4- and 8-byte integers: boundary values find the overflow bugs.
      static const uint64_t kValues[] = {0, 1, 0x7fffffff, 0xffffffff, ~0ull, 1ull << 40, 4096};
      uint64_t v = kValues[rng() % 7];
      size_t p = pos(rng) & ~size_t{7};
      if (p + 8 <= s.size()) std::memcpy(&s[p], &v, 8);
      break;
    }
    default:
      s.resize(pos(rng));
      break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  long iterations = 2000;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = std::atol(argv[++i]);
      continue;
    }
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read seed %s\n", argv[i]);
      return 2;
    }
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (FuzzSeeds != nullptr) FuzzSeeds(&seeds);
  if (seeds.empty()) seeds.emplace_back();
  std::mt19937_64 rng(12345);
  long runs = 0;
  for (const std::string& seed : seeds) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(seed.data()), seed.size());
    for (long i = 0; i < iterations; ++i, ++runs) {
      std::string input = seed;
      for (int m = 1 + static_cast<int>(rng() % 4); m > 0; --m) Mutate(input, rng);
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
    }
  }
  std::printf("%ld mutated inputs over %zu seeds: no crash\n", runs, seeds.size());
  return 0;
}
