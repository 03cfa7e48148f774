// How an exporter finds its peers and which one correlates: Slurm host lists, the --peers and
// --peers-from values (good and bad), Prometheus' targets answer, and the election order.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "exporters/multinode/peer_election.h"
#include "exporters/multinode/peer_sources.h"
#include "exporters/multinode/slurm_hostlist.h"
#include "tests/e2e/scratch_dir.h"

namespace ncclscope::exporters {
namespace {

std::vector<std::string> Hosts(const std::string& list) {
  std::vector<std::string> out;
  std::string error;
  EXPECT_TRUE(ExpandHostlist(list, &out, &error)) << list << ": " << error;
  return out;
}

std::string HostlistError(const std::string& list) {
  std::vector<std::string> out = {"kept"};
  std::string error;
  EXPECT_FALSE(ExpandHostlist(list, &out, &error)) << list;
  EXPECT_EQ(out, std::vector<std::string>{"kept"}) << "output untouched on error";
  return error;
}

TEST(SlurmHostlist, ExpandsRangesListsAndPadding) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Hosts("gpu[001-004,010],login1"),
            (V{"gpu001", "gpu002", "gpu003", "gpu004", "gpu010", "login1"}));
  EXPECT_EQ(Hosts("node1"), V{"node1"});
  EXPECT_EQ(Hosts("n[8-10]"), (V{"n8", "n9", "n10"}));
  EXPECT_EQ(Hosts("n[08-10]"), (V{"n08", "n09", "n10"}));
  EXPECT_EQ(Hosts("r[1-2]n[1-2]"), (V{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(Hosts("a[1-2]-ib,b.example.org"), (V{"a1-ib", "a2-ib", "b.example.org"}));
  EXPECT_EQ(Hosts("x[3]"), V{"x3"});
}

TEST(SlurmHostlist, BadListsSayWhatIsWrong) {
  EXPECT_NE(HostlistError("gpu[1-4").find("'[' without ']'"), std::string::npos);
  EXPECT_NE(HostlistError("gpu1-4]").find("']' without '['"), std::string::npos);
  EXPECT_NE(HostlistError("gpu[1-[2]]").find("nested '['"), std::string::npos);
  EXPECT_NE(HostlistError("gpu[4-1]").find("range '4-1' goes backwards"), std::string::npos);
  EXPECT_NE(HostlistError("gpu[a-b]").find("'a-b' is not a number"), std::string::npos);
  EXPECT_NE(HostlistError("gpu[1,,2]").find("'' is not a number"), std::string::npos);
  EXPECT_NE(HostlistError("gpu[]").find("is not a number"), std::string::npos);
  EXPECT_NE(HostlistError("a,,b").find("empty host name at position 3"), std::string::npos);
  EXPECT_NE(HostlistError("").find("empty host name"), std::string::npos);
  EXPECT_NE(HostlistError("gpu 1").find("character ' '"), std::string::npos);
  EXPECT_NE(HostlistError("n[0-999999999]").find("more than"), std::string::npos);
  EXPECT_NE(HostlistError("a[0-999]b[0-999]c[0-999]").find("more than"), std::string::npos);
}

struct Parsed {
  bool ok = false;
  PeerPlan plan;
  std::string error;
};

Parsed Parse(const std::vector<std::string>& peers, const std::vector<std::string>& from,
             const std::map<std::string, std::string>& env = {}) {
  Parsed p;
  const auto lookup = [&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  p.ok = ParsePeerOptions(peers, from, 9478, lookup, &p.plan, &p.error);
  return p;
}

std::vector<std::string> Bases(const std::vector<PeerUrl>& peers) {
  std::vector<std::string> out;
  for (const PeerUrl& p : peers) out.push_back(p.base);
  return out;
}

TEST(PeerOptions, UrlsHostsAndHostfiles) {
  testing::ScratchDir scratch;
  const std::string hostfile = scratch / "hosts";
  std::ofstream(hostfile) << "# nodes\nnodeA\n  nodeB:9500  # the second\n\n[fe80::1]:9478\n";
  const Parsed p = Parse({"http://n1:9000/digest", "n2", "n3:9001", "[::1]", hostfile}, {});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(Bases(p.plan.fixed),
            (std::vector<std::string>{"http://n1:9000", "http://n2:9478", "http://n3:9001",
                                      "http://[::1]:9478", "http://nodeA:9478", "http://nodeB:9500",
                                      "http://[fe80::1]:9478"}));
  EXPECT_EQ(p.plan.fixed[2].label, "n3:9001");
}

TEST(PeerOptions, BadValuesNameTheOptionAndTheProblem) {
  testing::ScratchDir scratch;
  const std::string hostfile = scratch / "hosts";
  std::ofstream(hostfile) << "good\nbad host\n";
  EXPECT_NE(Parse({hostfile}, {}).error.find(hostfile + ":2: 'bad host' is not host[:port]"),
            std::string::npos);
  EXPECT_NE(Parse({"n1:99999"}, {}).error.find("--peers n1:99999: neither"), std::string::npos);
  EXPECT_NE(Parse({"ftp://x"}, {}).error.find("--peers ftp://x: only http://"), std::string::npos);
  EXPECT_NE(Parse({scratch.path()}, {}).error.find("is not a file"), std::string::npos);
  EXPECT_NE(Parse({}, {"consul"}).error.find("--peers-from consul: unknown source"),
            std::string::npos);
  EXPECT_NE(Parse({}, {"dns:svc:http"}).error.find("'http' is not a port"), std::string::npos);
  EXPECT_NE(Parse({}, {"dns:"}).error.find("is not a DNS name"), std::string::npos);
  EXPECT_NE(Parse({}, {"prometheus:prom:9090"}).error.find("expected prometheus:http"),
            std::string::npos);
  EXPECT_NE(Parse({}, {"prometheus:http://prom:9090:"}).error.find("empty scrape job"),
            std::string::npos);
}

TEST(PeerOptions, SlurmNodeListPreferredThenTheOldName) {
  const Parsed p =
      Parse({}, {"slurm"}, {{"SLURM_JOB_NODELIST", "gpu[01-02]"}, {"SLURM_NODELIST", "other"}});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(Bases(p.plan.fixed),
            (std::vector<std::string>{"http://gpu01:9478", "http://gpu02:9478"}));
  const Parsed old = Parse({}, {"slurm"}, {{"SLURM_NODELIST", "n7"}});
  ASSERT_TRUE(old.ok) << old.error;
  EXPECT_EQ(Bases(old.plan.fixed), std::vector<std::string>{"http://n7:9478"});
  EXPECT_NE(Parse({}, {"slurm"}).error.find("neither SLURM_JOB_NODELIST nor SLURM_NODELIST"),
            std::string::npos);
  EXPECT_NE(Parse({}, {"slurm"}, {{"SLURM_JOB_NODELIST", "gpu[1-"}})
                .error.find("--peers-from slurm: SLURM_JOB_NODELIST='gpu[1-'"),
            std::string::npos);
}

TEST(PeerOptions, DnsAndPrometheusForms) {
  const Parsed p = Parse({}, {"dns:ncclscope.train.svc.cluster.local", "dns:svc:9600",
                              "prometheus:http://prom:9090", "prometheus:https://p/:gpu-nodes"});
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(p.plan.dns.size(), 2u);
  EXPECT_EQ(p.plan.dns[0].name, "ncclscope.train.svc.cluster.local");
  EXPECT_EQ(p.plan.dns[0].port, 9478);
  EXPECT_EQ(p.plan.dns[1].port, 9600);
  ASSERT_EQ(p.plan.prometheus.size(), 2u);
  EXPECT_EQ(p.plan.prometheus[0].api, "http://prom:9090");
  EXPECT_EQ(p.plan.prometheus[0].job, kDefaultPrometheusJob);
  EXPECT_EQ(p.plan.prometheus[1].api, "https://p");
  EXPECT_EQ(p.plan.prometheus[1].job, "gpu-nodes");
}

TEST(PeerOptions, LocalhostResolvesThroughDns) {
  PeerPlan plan;
  plan.dns.push_back({"localhost", 9478});
  std::vector<std::string> errors;
  const std::vector<PeerUrl> peers = ResolvePeers(plan, 1, &errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  ASSERT_FALSE(peers.empty());
  for (const PeerUrl& p : peers) {
    EXPECT_TRUE(p.base == "http://127.0.0.1:9478" || p.base == "http://[::1]:9478") << p.base;
  }
  plan.dns = {{"no-such-host.invalid", 9478}};
  errors.clear();
  EXPECT_TRUE(ResolvePeers(plan, 1, &errors).empty());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind("dns:no-such-host.invalid: ", 0), 0u) << errors[0];
}

TEST(PrometheusTargets, ActiveTargetsOfTheJob) {
  const std::string body = R"({"status":"success","data":{"activeTargets":[
    {"labels":{"job":"ncclscope","instance":"gpu01:9478"},"scrapeUrl":"http://gpu01:9478/metrics","health":"up"},
    {"labels":{"job":"node","instance":"gpu01:9100"},"scrapeUrl":"http://gpu01:9100/metrics"},
    {"labels":{"job":"ncclscope"},"scrapeUrl":"http://10.0.0.7:9478/metrics","health":"down"},
    {"labels":{"job":"ncclscope"}},
    "junk"
  ],"droppedTargets":[]}})";
  std::vector<PeerUrl> out;
  std::string error;
  ASSERT_TRUE(ParsePrometheusTargets(body, "ncclscope", &out, &error)) << error;
  EXPECT_EQ(Bases(out), (std::vector<std::string>{"http://gpu01:9478", "http://10.0.0.7:9478"}));
  out.clear();
  EXPECT_FALSE(ParsePrometheusTargets("<html>", "ncclscope", &out, &error));
  EXPECT_EQ(error, "not JSON");
  EXPECT_FALSE(ParsePrometheusTargets(R"({"status":"error"})", "ncclscope", &out, &error));
  EXPECT_FALSE(ParsePrometheusTargets(R"({"status":"success","data":{}})", "x", &out, &error));
  EXPECT_EQ(error, "no data.activeTargets array");
}

TEST(PeerElection, OrderByLowestRankThenHost) {
  EXPECT_TRUE(Before({0, "z"}, {4, "a"}));
  EXPECT_FALSE(Before({4, "a"}, {0, "z"}));
  EXPECT_TRUE(Before({4, "a"}, {4, "b"}));
  EXPECT_FALSE(Before({4, "a"}, {4, "a"}));
  EXPECT_TRUE(Before({12, "z"}, {-1, "a"})) << "a node holding a rank first";
}

TEST(PeerElection, TheFirstReachableNodeCorrelates) {
  const NodeKey node0{0, "node0"}, node1{4, "node1"}, node2{8, "node2"};
  const PeerView up0{node0, true, false}, down0{node0, false, false};
  const PeerView up1{node1, true, false}, down1{node1, false, false};
  const PeerView up2{node2, true, false};
  EXPECT_TRUE(ShouldCorrelate(node0, {up1, up2}));
  EXPECT_FALSE(ShouldCorrelate(node1, {up0, up2}));
  EXPECT_TRUE(ShouldCorrelate(node1, {down0, up2})) << "rank 0's node gone: the next takes over";
  EXPECT_FALSE(ShouldCorrelate(node2, {down0, up1}));
  EXPECT_TRUE(ShouldCorrelate(node2, {down0, down1}));
  EXPECT_FALSE(ShouldCorrelate({-1, "login"}, {down0, down1})) << "no rank: nothing to correlate";
  EXPECT_TRUE(ShouldCorrelate(node1, {PeerView{node0, true, true}})) << "itself is no peer";
  EXPECT_TRUE(ShouldCorrelate(node1, {PeerView{{-1, "a"}, true, false}}))
      << "a peer whose place is unknown is not before it";
}

TEST(PeerElection, ExportersSharingAHostNameAndRanksElectOneByInstance) {
  // Two exporters without their node's name read one shared directory: same lowest rank, same
  // host. Each sees the other as a peer (different instance ids); exactly one correlates.
  const NodeKey a{0, "buildbox", 7}, b{0, "buildbox", 9};
  EXPECT_TRUE(Before(a, b));
  EXPECT_FALSE(Before(b, a));
  EXPECT_NE(ShouldCorrelate(a, {PeerView{b, true, false}}),
            ShouldCorrelate(b, {PeerView{a, true, false}}));
  // Sharing the name, not the ranks: the order is the ranks', as ever.
  EXPECT_TRUE(ShouldCorrelate({0, "buildbox", 9}, {PeerView{{4, "buildbox", 7}, true, false}}));
  EXPECT_FALSE(ShouldCorrelate({4, "buildbox", 7}, {PeerView{{0, "buildbox", 9}, true, false}}));
}

TEST(PeerElection, WhatANonCorrelatingNodeLooksAt) {
  const NodeKey self{4, "node1"};
  EXPECT_EQ(LookAt(self, {{-1, ""}, false, false}), Look::kDigest);
  EXPECT_EQ(LookAt(self, {{0, "node0"}, true, false}), Look::kHealth);
  EXPECT_EQ(LookAt(self, {{8, "node2"}, true, false}), Look::kNone);
  EXPECT_EQ(LookAt(self, {{4, "node1"}, true, true}), Look::kNone);
}

}  // namespace
}  // namespace ncclscope::exporters
