// Runs a fuzz target without libFuzzer (gcc builds, CI): each seed as is, then a fixed number of
// deterministic mutations of it (bit flips, byte stores, word stores of boundary values,
// truncation). Usage: <target> SEED_FILE... [--iterations N] [--shard K/N]
// --shard K/N runs only the inputs whose number (in the order one whole run makes them) is K
// modulo N: the N shards together run exactly the inputs of one whole run, so a long target can
// be several ctest tests that each stay short.
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

// One mutation of an input of `*size` bytes, written into `s` when it is given; without it only
// the size is followed. Either way the same numbers are drawn from `rng`, so a shard that skips an
// input still draws the inputs after it exactly as a whole run does.
void Mutate(std::string* s, size_t* size, std::mt19937_64& rng) {
  if (*size == 0) return;
  std::uniform_int_distribution<size_t> pos(0, *size - 1);
  switch (rng() % 4) {
    case 0: {
      const unsigned bit = rng() % 8;
      const size_t p = pos(rng);
      if (s != nullptr) (*s)[p] ^= static_cast<char>(1u << bit);
      break;
    }
    case 1: {
      const char value = static_cast<char>(rng());
      const size_t p = pos(rng);
      if (s != nullptr) (*s)[p] = value;
      break;
    }
    case 2: {
      // Header fields are 4- and 8-byte integers: boundary values find the overflow bugs.
      static const uint64_t kValues[] = {0, 1, 0x7fffffff, 0xffffffff, ~0ull, 1ull << 40, 4096};
      const uint64_t v = kValues[rng() % 7];
      const size_t p = pos(rng) & ~size_t{7};
      if (s != nullptr && p + 8 <= *size) std::memcpy(&(*s)[p], &v, 8);
      break;
    }
    default:
      *size = pos(rng);
      if (s != nullptr) s->resize(*size);
      break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  long iterations = 2000;
  long shard = 0, shards = 1;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = std::atol(argv[++i]);
      continue;
    }
    if (std::strcmp(argv[i], "--shard") == 0 && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%ld/%ld", &shard, &shards) != 2 || shards < 1 || shard < 0 ||
          shard >= shards) {
        std::fprintf(stderr, "--shard %s: expected K/N with 0 <= K < N\n", argv[i]);
        return 2;
      }
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
  long number = 0;  // of the input, in the order a whole run makes them
  long runs = 0;    // inputs this shard ran
  const auto ours = [&] { return number++ % shards == shard; };
  for (const std::string& seed : seeds) {
    if (ours()) {
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(seed.data()), seed.size());
      ++runs;
    }
    for (long i = 0; i < iterations; ++i) {
      const bool run = ours();
      std::string input = run ? seed : std::string();
      size_t size = seed.size();
      for (int m = 1 + static_cast<int>(rng() % 4); m > 0; --m) {
        Mutate(run ? &input : nullptr, &size, rng);
      }
      if (!run) continue;
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
      ++runs;
    }
  }
  std::printf("%ld inputs (seeds and their mutations) over %zu seeds, shard %ld/%ld: no crash\n",
              runs, seeds.size(), shard, shards);
  return 0;
}
