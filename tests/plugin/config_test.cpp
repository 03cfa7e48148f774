#include "plugin/core/config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace ncclscope::plugin {
namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(ConfigTest, DefaultsWhenNothingIsSet) {
  std::vector<std::string> warnings;
  const Config c = ParseConfig(FakeEnv{}.lookup(), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_TRUE(c.enable);
  EXPECT_EQ(c.dir, "");
  EXPECT_EQ(c.ring_records, 65536u);
  EXPECT_TRUE(c.track_completion);
  EXPECT_EQ(c.completion_poll_us, 200);
  EXPECT_EQ(c.event_pool, 1024);
  EXPECT_EQ(c.cuda_library, "libcuda.so.1");
  EXPECT_EQ(c.fork, "reinit");
  EXPECT_TRUE(c.warn);
}

TEST(ConfigTest, GoodValuesAreTaken) {
  FakeEnv env;
  env.vars = {{"NCCLSCOPE_ENABLE", "off"},
              {"NCCLSCOPE_DIR", "/x/y"},
              {"NCCLSCOPE_RING_RECORDS", "1m"},
              {"NCCLSCOPE_TRACK_COMPLETION", "FALSE"},
              {"NCCLSCOPE_COMPLETION_POLL_US", "50"},
              {"NCCLSCOPE_EVENT_POOL", "16"},
              {"NCCLSCOPE_FORK", "off"},
              {"NCCLSCOPE_WARN", "no"}};
  std::vector<std::string> warnings;
  const Config c = ParseConfig(env.lookup(), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_FALSE(c.enable);
  EXPECT_EQ(c.dir, "/x/y");
  EXPECT_EQ(c.ring_records, 1u << 20);
  EXPECT_FALSE(c.track_completion);
  EXPECT_EQ(c.completion_poll_us, 50);
  EXPECT_EQ(c.event_pool, 16);
  EXPECT_EQ(c.fork, "off");
  EXPECT_FALSE(c.warn);
}

TEST(ConfigTest, BadValuesWarnOncePerVariableAndKeepDefaults) {
  FakeEnv env;
  env.vars = {{"NCCLSCOPE_ENABLE", "maybe"},
              {"NCCLSCOPE_RING_RECORDS", "-5"},
              {"NCCLSCOPE_COMPLETION_POLL_US", "5"},  // below the minimum of 10
              {"NCCLSCOPE_EVENT_POOL", "12abc"},
              {"NCCLSCOPE_FORK", "sometimes"}};
  std::vector<std::string> warnings;
  const Config c = ParseConfig(env.lookup(), &warnings);
  ASSERT_EQ(warnings.size(), 5u);
  EXPECT_NE(warnings[0].find("NCCLSCOPE_ENABLE='maybe'"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("NCCLSCOPE_RING_RECORDS='-5'"), std::string::npos) << warnings[1];
  EXPECT_NE(warnings[2].find("10..1000000"), std::string::npos) << warnings[2];
  EXPECT_TRUE(c.enable);
  EXPECT_EQ(c.ring_records, 65536u);
  EXPECT_EQ(c.completion_poll_us, 200);
  EXPECT_EQ(c.event_pool, 1024);
  EXPECT_EQ(c.fork, "reinit");
}

TEST(ConfigTest, ScalarParsers) {
  bool b = false;
  EXPECT_TRUE(ParseBool("Yes", &b) && b);
  EXPECT_TRUE(ParseBool("0", &b) && !b);
  EXPECT_FALSE(ParseBool("", &b));
  EXPECT_FALSE(ParseBool("2", &b));
  int64_t i = 0;
  EXPECT_TRUE(ParseInt("-3", "", &i));
  EXPECT_EQ(i, -3);
  EXPECT_FALSE(ParseInt(" 3", "", &i));
  EXPECT_FALSE(ParseInt("99999999999999999999", "", &i));
  EXPECT_FALSE(ParseInt("11", "1..10", &i));
  uint64_t s = 0;
  EXPECT_TRUE(ParseSize("4k", "", &s));
  EXPECT_EQ(s, 4096u);
  EXPECT_TRUE(ParseSize("2G", "", &s));
  EXPECT_EQ(s, 2ull << 30);
  EXPECT_FALSE(ParseSize("4kb", "", &s));
  EXPECT_FALSE(ParseSize("18446744073709551615g", "", &s));
  EXPECT_TRUE(ParseEnum("b", "a|b|c"));
  EXPECT_FALSE(ParseEnum("", "a|b|c"));
  EXPECT_FALSE(ParseEnum("a|b", "a|b|c"));
}

TEST(ConfigTest, EveryDefaultParsesAndIsDocumented) {
  const std::string md = RenderConfigMarkdown();
  for (const ConfigVarInfo& v : ConfigVars()) {
    FakeEnv env;
    env.vars[v.name] = v.default_text;
    std::vector<std::string> warnings;
    ParseConfig(env.lookup(), &warnings);
    EXPECT_TRUE(warnings.empty()) << v.name << ": default does not parse";
    EXPECT_NE(md.find(std::string("`") + v.name + "`"), std::string::npos) << v.name;
    EXPECT_NE(std::string(v.doc), "") << v.name;
  }
  EXPECT_GE(ConfigVars().size(), 8u);
}

}  // namespace
}  // namespace ncclscope::plugin
