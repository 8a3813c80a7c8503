//===- DiskCache.h - compiled kernels cached on disk ---------------*- C++ -*-===//
//
// A cold ts::jit of a GEMM spends about half a second in MLIR, LLVM and
// ptxas; a process that jits the same kernel again finds it here instead
// (DESIGN.md §7). One file per kernel (and per launch-time variant) in the
// cache directory (TESSEL_CACHE_DIR, else $XDG_CACHE_HOME/tessel, else
// ~/.cache/tessel), named after a 128-bit hash of its key:
//
//   key  = the toolchain (cacheToolchainIdentity: tessel's version and the
//            build id of the library that compiles, ptxas's path and
//            `--version`, the target architecture)
//          + the LLVM version (added by the caller, which links LLVM)
//          + every option that changes the code (optionsKey)
//          + the variant request, for launch-time variants
//          + the traced program without locations.
//
// The entry file (format version kEntryFormatVersion, little-endian):
//
//   "TESSELKC"  u32 format version  u32 0  u64 key bytes  u64 payload bytes
//   u64 checksum (xxh64 of the payload, seeded with xxh64 of the key)
//   key text (echoed: a hash collision or a foreign entry is detected)
//   payload: named records, each u16 name length, name, u64 length, bytes
//            ("source-hash", "name", "args", "params", ..., "stages")
//
// and nothing after the payload. Anything else (another magic or version,
// another key, a bad checksum, a truncated or oversized file, a record
// missing or malformed, a kernel validateCompiledKernel rejects) is a miss:
// the kernel is compiled and the entry replaced, and the first such entry of
// the process is named in one "tessel: warning: ..." line.
//
// A hit also needs the traced program's text *with* locations to hash to the
// entry's "source-hash": source positions appear in launch-time messages
// (size contracts) and in the dumped 01-tessel.mlir. The hash is part of the
// entry's file name too, so the same program jitted from two call sites (an
// example and tessel-bench, a library and its test) has an entry for each, and
// both hit in later processes; before, each replaced the other's entry and every
// run compiled cold. A kernel whose source moved (an edit above it) gets a new
// entry; the stale one ages out of the LRU cap.
//
// Entries are written to a temporary file in the same directory and renamed
// (writeFileAtomic): readers, in any process, see a whole entry or none. A hit
// sets the entry's access time (LRU); after each write the entries beyond
// TESSEL_CACHE_MAX_BYTES (default 1 GiB) are removed, least recently used
// first. A directory that cannot be created or written is reported once per
// process and directory ("tessel: warning: ..."), and kernels are compiled
// without the cache. TESSEL_DISABLE_CACHE turns it off.
//
// No MLIR here: TesselRuntime and tools/tessel-cache use it without LLVM.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/Runtime/CompiledKernel.h"
#include "tessel/kernel/runtime_api.hpp"

namespace tessel::runtime {

/// Bumped whenever the entry layout or a record's encoding changes.
inline constexpr std::uint32_t kEntryFormatVersion = 2;  // 2: ParamSpec::clipRows
/// File name suffix of cache entries.
inline constexpr const char* kEntrySuffix = ".tkc";
/// TESSEL_CACHE_MAX_BYTES when unset.
inline constexpr std::uint64_t kDefaultCacheMaxBytes = std::uint64_t(1) << 30;

/// XXH64 of `data` (the published algorithm; stable across builds and hosts).
std::uint64_t xxh64(std::string_view data, std::uint64_t seed = 0);
/// `v` as 16 lowercase hex digits.
std::string hex16(std::uint64_t v);
/// 32 hex digits: two independently seeded XXH64 of `data` (128 bits, so that distinct keys do
/// not collide in practice): the names of cache and autotune entries, a program's identity.
std::string hash128Hex(std::string_view data);

/// Every option that changes the generated code, as "name=value;" pairs
/// (schedule, stages, cluster, swizzle, raster group, decomposition, debug
/// with TESSEL_DEBUG resolved). Not dump_dir nor verbose: they change where
/// and what is printed, not the kernel.
std::string optionsKey(const options& o);

/// Toolchain lines of the key: "tessel=<version> build=<build id of the
/// library holding this code>", "ptxas=<path> <version>" (or "ptxas=none")
/// and "arch=<CompiledKernel::arch>". ptxas --version takes ~10 ms: it is run
/// once per process and ptxas binary, and remembered in the cache directory
/// (keyed by the binary's path, size, mtime and inode) so that a hit in a new
/// process does not run it.
std::string cacheToolchainIdentity(const std::string& cacheDir);

/// The entry file for a key: <dir>/<32 hex digits of its hash><kEntrySuffix>.
std::string cacheEntryPath(const std::string& dir, std::string_view key);
/// The entry file compileWithDiskCache uses for `fullKey` (the toolchain identity, then the key)
/// and the traced program with locations `tracedText`: cacheEntryPath of both, so that one
/// program jitted from two call sites has two entries, both hits (see the file comment).
std::string cacheEntryPathFor(const std::string& dir, std::string_view fullKey, std::string_view tracedText);

/// Encodes an entry (the file's whole contents).
std::string encodeCacheEntry(std::string_view key, std::uint64_t sourceHash, const CompiledKernel& k);

/// What decodeCacheEntry found.
struct DecodedEntry {
  CompiledKernel kernel;
  std::string key;
  std::uint64_t sourceHash = 0;
  std::uint32_t formatVersion = 0;
};
/// Decodes an entry; nullopt with *why (one phrase: "truncated: ...",
/// "format version 7, expected 1", "checksum mismatch", ...) when it is not a
/// valid entry of this format. With a non-empty `expectedKey`, an entry for
/// another key is rejected too. The kernel passes validateCompiledKernel.
std::optional<DecodedEntry> decodeCacheEntry(std::string_view data, std::string_view expectedKey,
                                             std::string* why);

/// The on-disk cache as the knobs say now.
struct DiskCacheConfig {
  bool enabled = false;   ///< a directory is known and TESSEL_DISABLE_CACHE is off
  std::string dir;        ///< Knobs::cacheDir
  std::uint64_t maxBytes = kDefaultCacheMaxBytes;  ///< TESSEL_CACHE_MAX_BYTES
};
DiskCacheConfig diskCacheConfig();

/// Parses a size: a number of bytes with an optional K, M, G or T suffix
/// (powers of 1024, "KiB"/"KB" spellings too). nullopt when malformed.
std::optional<std::uint64_t> parseByteSize(std::string_view text);

/// Returns the kernel for `key` (see the file comment): from the cache when a
/// valid entry is at cacheEntryPathFor(key, `tracedText`) and its source hash
/// is xxh64(`tracedText`), else
/// `compile()`'s result, which is then stored. `key` holds the options, the
/// variant and the program without locations; the toolchain identity is
/// added here. `*hit` says which. With `verbose` a hit is logged ("tessel:
/// '<name>' from the disk cache (<file>, <ms>)"). Cache failures never fail
/// the compile; compile() exceptions propagate.
CompiledKernel compileWithDiskCache(const std::string& key, std::string_view tracedText, bool verbose,
                                    const std::function<CompiledKernel()>& compile, bool* hit = nullptr);

/// One entry file, for listing and eviction.
struct CacheEntryFile {
  std::string path;
  std::uint64_t bytes = 0;
  std::int64_t accessNs = 0;  ///< last access time (ns since the epoch)
};
/// The entry files in `dir` (none when it does not exist), oldest access first.
std::vector<CacheEntryFile> listCacheEntries(const std::string& dir);
/// Removes the least recently used entries of `dir` until they total at most
/// `maxBytes` (entries other processes remove meanwhile are skipped), and
/// temporary files of writers that died more than an hour ago. Returns the
/// number of entries removed.
std::size_t evictCacheEntries(const std::string& dir, std::uint64_t maxBytes);
/// Removes every entry and temporary file of `dir` (and the ptxas version
/// memos and ts::autotune's saved choices, "*.tune"). Returns the number of
/// kernel entries removed.
std::size_t clearCache(const std::string& dir);

/// Tests: forget which warnings this process has printed.
void resetDiskCacheWarningsForTesting();

}  // namespace tessel::runtime
