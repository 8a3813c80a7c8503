//===- CacheToolTest.cpp - tools/tessel-cache's command line ---------------===//
//
// Runs the tessel-cache binary on cache directories of hand-made entries
// (encodeCacheEntry of TestSupport.h's gemmKernel), with TESSEL_CACHE_DIR
// naming another directory, so that a command run on the wrong one shows:
//   - --dir after the command is the directory used (`clear --dir X` once
//     cleared $TESSEL_CACHE_DIR instead), and an argument the tool does not
//     take is a usage error (exit status 2) that touches nothing;
//   - `list` and `stats` read every entry without moving its access time,
//     the LRU order of `trim` and of ts::jit's eviction.
// No GPU, no libtessel.
//
//===----------------------------------------------------------------------===//

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "TestSupport.h"
#include "run_command.hpp"
#include "tessel/Runtime/DiskCache.h"

namespace fs = std::filesystem;
namespace rt = tessel::runtime;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

using Result = tessel_test::command_result;

class CacheTool : public ::testing::Test {
public:
  fs::path dir;

  void SetUp() override {
    dir = fs::temp_directory_path() / ("tessel-cache-tool-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir / "default");
    fs::create_directories(dir / "other");
  }
  void TearDown() override { fs::remove_all(dir); }

  /// $TESSEL_CACHE_DIR of every run: what the tool uses without --dir.
  std::string defaultDir() const { return (dir / "default").string(); }
  std::string otherDir() const { return (dir / "other").string(); }

  /// A valid entry `name`.tkc in `where` (kernel "gemm").
  std::string addEntry(const std::string& where, const std::string& name) const {
    const std::string path = where + "/" + name + rt::kEntrySuffix;
    std::ofstream(path, std::ios::binary) << rt::encodeCacheEntry("key " + name, 1, tessel::testing::gemmKernel());
    return path;
  }
  static std::size_t entryCount(const std::string& where) { return rt::listCacheEntries(where).size(); }

  /// Runs tessel-cache `args` (shell words) with TESSEL_CACHE_DIR=defaultDir().
  Result tool(const std::string& args) const {
    const std::string cmd = "env -u TESSEL_DISABLE_CACHE -u TESSEL_CACHE_MAX_BYTES TESSEL_CACHE_DIR='" + defaultDir() +
                            "' '" TESSEL_CACHE_TOOL "' " + args + " 2>&1";
    return tessel_test::run_command(cmd);
  }
};

timespec atimeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_atim;
}
void setAtime(const std::string& path, std::time_t seconds) {
  const timespec times[2] = {{seconds, 0}, {0, UTIME_OMIT}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

TEST_F(CacheTool, DirAfterTheCommandIsTheDirectoryUsed) {
  addEntry(defaultDir(), "a");
  addEntry(otherDir(), "b");
  addEntry(otherDir(), "c");

  Result list = tool("list --dir '" + otherDir() + "'");
  EXPECT_EQ(list.status, 0) << list.output;
  EXPECT_THAT(list.output, HasSubstr("b.tkc"));
  EXPECT_THAT(list.output, Not(HasSubstr("a.tkc")));
  Result stats = tool("stats --dir=" + otherDir());
  EXPECT_EQ(stats.status, 0) << stats.output;
  EXPECT_THAT(stats.output, HasSubstr("directory      " + otherDir()));
  EXPECT_THAT(stats.output, HasSubstr("entries        2 (0 invalid"));

  Result clear = tool("clear --dir '" + otherDir() + "'");
  EXPECT_EQ(clear.status, 0) << clear.output;
  EXPECT_THAT(clear.output, HasSubstr("removed 2 entries from " + otherDir()));
  EXPECT_EQ(entryCount(otherDir()), 0u);
  EXPECT_EQ(entryCount(defaultDir()), 1u) << "clear --dir X cleared $TESSEL_CACHE_DIR";

  // Before the command, as before; the same directory twice is no conflict.
  addEntry(otherDir(), "d");
  Result trim = tool("--dir '" + otherDir() + "' trim 0 --dir '" + otherDir() + "'");
  EXPECT_EQ(trim.status, 0) << trim.output;
  EXPECT_EQ(entryCount(otherDir()), 0u);
  EXPECT_EQ(entryCount(defaultDir()), 1u);
}

TEST_F(CacheTool, UnknownAndExtraArgumentsAreUsageErrorsThatTouchNothing) {
  addEntry(defaultDir(), "a");
  addEntry(otherDir(), "b");
  const struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"list extra", "list takes no argument (got 'extra')"},
      {"clear now", "clear takes no argument (got 'now')"},
      {"stats --verbose", "unknown option '--verbose' (the only option is --dir DIR)"},
      {"clear --force", "unknown option '--force'"},
      {"trim 1K 2K", "trim takes at most one SIZE (got '2K')"},
      {"trim lots", "trim: 'lots' is not a size"},
      {"clear --dir", "--dir needs a directory"},
      {"clear --dir=", "--dir needs a directory, not an empty string"},
      {"--dir /nonexistent-a clear --dir /nonexistent-b", "--dir given twice"},
      {"", "no command"},
      {"wipe", "unknown command 'wipe'"},
  };
  for (const auto& c : cases) {
    Result r = tool(c.args);
    EXPECT_EQ(r.status, 2) << "tessel-cache " << c.args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << "tessel-cache " << c.args;
    EXPECT_THAT(r.output, HasSubstr("usage: tessel-cache")) << "tessel-cache " << c.args;
    EXPECT_EQ(entryCount(defaultDir()), 1u) << "tessel-cache " << c.args;
    EXPECT_EQ(entryCount(otherDir()), 1u) << "tessel-cache " << c.args;
  }
  Result help = tool("list --help");
  EXPECT_EQ(help.status, 0) << help.output;
  EXPECT_THAT(help.output, HasSubstr("usage: tessel-cache"));
}

// listCacheEntries orders by access time; a read that set it ("now", as ext4's
// relatime does for an access time older than a day) would leave the entries
// tied, in file-name order: here the newer entry's name sorts first, so trim
// would then evict it instead of the older one.
TEST_F(CacheTool, ListAndStatsKeepTheEntriesAccessTimes) {
  const std::string older = addEntry(otherDir(), "b-older");
  const std::string newer = addEntry(otherDir(), "a-newer");
  setAtime(older, 1577836800);  // 2020-01-01
  setAtime(newer, 1577923200);  // 2020-01-02
  for (const char* cmd : {"list", "stats", "list"}) {
    Result r = tool("--dir '" + otherDir() + "' " + cmd);
    EXPECT_EQ(r.status, 0) << cmd << "\n" << r.output;
    EXPECT_THAT(r.output, Not(HasSubstr("(invalid:"))) << r.output;
    EXPECT_EQ(atimeOf(older).tv_sec, 1577836800) << "after tessel-cache " << cmd;
    EXPECT_EQ(atimeOf(older).tv_nsec, 0) << "after tessel-cache " << cmd;
    EXPECT_EQ(atimeOf(newer).tv_sec, 1577923200) << "after tessel-cache " << cmd;
    EXPECT_EQ(atimeOf(newer).tv_nsec, 0) << "after tessel-cache " << cmd;
  }
  // trim keeps the most recently used entry (trim's own behaviour: it reads no entry).
  const std::uint64_t oneEntry = fs::file_size(newer);
  Result trim = tool("--dir '" + otherDir() + "' trim " + std::to_string(oneEntry));
  EXPECT_EQ(trim.status, 0) << trim.output;
  EXPECT_THAT(trim.output, HasSubstr("removed 1 entries"));
  EXPECT_FALSE(fs::exists(older)) << "the least recently used entry must go";
  EXPECT_TRUE(fs::exists(newer));
}

}  // namespace
