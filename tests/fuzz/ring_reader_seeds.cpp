// Seeds for the ring reader fuzz target: real ring files written by the real writer.
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/trace/temp_dir.h"
#include "trace/ring_writer.h"

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  using namespace ncclscope::trace;
  ncclscope::testing::TempDir tmp;
  RingOptions o;
  o.dir = tmp.path();
  o.record_capacity = 64;
  o.comm_capacity = 4;
  std::string error;
  auto w = RingWriter::Create(o, &error);
  if (!w) return;
  CommInfo c;
  c.id = 7;
  c.name = "world";
  w->AddComm(c);
  RecordData r{};
  for (int i = 0; i < 100; ++i) w->Append(r, i % 2 == 0);  // wraps
  std::ifstream in(w->path(), std::ios::binary);
  seeds->emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
