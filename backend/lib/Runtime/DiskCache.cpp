//===- DiskCache.cpp - compiled kernels cached on disk ---------------------===//
//
// See DiskCache.h for the key, the entry format and the rules. Every failure
// of the cache itself (a missing, unreadable, corrupt or unwritable entry or
// directory) degrades to compiling: the cache can make a jit faster, never
// make it fail.
//
//===----------------------------------------------------------------------===//

#include "tessel/Runtime/DiskCache.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "tessel/Runtime/Env.h"
#include "tessel/Runtime/Kernel.h"
#include "tessel/Runtime/Ptxas.h"

#ifndef TESSEL_VERSION
#error "TESSEL_VERSION must be defined by the build (the project's version)"
#endif

namespace tessel::runtime {

//===----------------------------------------------------------------------===//
// XXH64
//===----------------------------------------------------------------------===//

namespace {
constexpr std::uint64_t kP1 = 0x9E3779B185EBCA87ULL, kP2 = 0xC2B2AE3D27D4EB4FULL,
                        kP3 = 0x165667B19E3779F9ULL, kP4 = 0x85EBCA77C2B2AE63ULL,
                        kP5 = 0x27D4EB2F165667C5ULL;

std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
std::uint64_t read64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // little-endian host (x86-64, aarch64): the published byte order
}
std::uint32_t read32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
std::uint64_t round64(std::uint64_t acc, std::uint64_t lane) {
  return rotl(acc + lane * kP2, 31) * kP1;
}
std::uint64_t merge64(std::uint64_t acc, std::uint64_t v) {
  return (acc ^ round64(0, v)) * kP1 + kP4;
}
}  // namespace

std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

std::string hash128Hex(std::string_view data) { return hex16(xxh64(data, 0)) + hex16(xxh64(data, 0x7e55e1)); }

std::uint64_t xxh64(std::string_view data, std::uint64_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const unsigned char* end = p + data.size();
  std::uint64_t acc;
  if (data.size() >= 32) {
    std::uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    for (; p + 32 <= end; p += 32) {
      v1 = round64(v1, read64(p));
      v2 = round64(v2, read64(p + 8));
      v3 = round64(v3, read64(p + 16));
      v4 = round64(v4, read64(p + 24));
    }
    acc = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    acc = merge64(merge64(merge64(merge64(acc, v1), v2), v3), v4);
  } else {
    acc = seed + kP5;
  }
  acc += data.size();
  for (; p + 8 <= end; p += 8)
    acc = rotl(acc ^ round64(0, read64(p)), 27) * kP1 + kP4;
  if (p + 4 <= end) {
    acc = rotl(acc ^ (read32(p) * kP1), 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p)
    acc = rotl(acc ^ (*p * kP5), 11) * kP1;
  acc ^= acc >> 33;
  acc *= kP2;
  acc ^= acc >> 29;
  acc *= kP3;
  acc ^= acc >> 32;
  return acc;
}

//===----------------------------------------------------------------------===//
// The key
//===----------------------------------------------------------------------===//

namespace {


const char* decompositionKeyName(decomposition d) {
  switch (d) {
  case decomposition::automatic: return "auto";
  case decomposition::data_parallel: return "data_parallel";
  case decomposition::stream_k: return "stream_k";
  }
  return "?";
}


/// The GNU build id of the ELF object that holds this code (libtessel.so, or
/// the executable it is linked into), so that a rebuilt compiler never reads
/// kernels its predecessor wrote under the same version number. Falls back to
/// the object's path, size and mtime when it has no build id.
std::string buildIdentity() {
  struct Search {
    std::uintptr_t address;
    std::string id;
  } search{reinterpret_cast<std::uintptr_t>(&buildIdentity), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        bool mine = false;
        for (int i = 0; i < info->dlpi_phnum && !mine; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          std::uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
          mine = ph.p_type == PT_LOAD && s->address >= begin && s->address < begin + ph.p_memsz;
        }
        if (!mine)
          return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE)
            continue;
          const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
          const unsigned char* end = p + ph.p_memsz;
          const std::size_t align = ph.p_align >= 8 ? 8 : 4;
          auto up = [&](std::size_t n) { return (n + align - 1) & ~(align - 1); };
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) n;
            std::memcpy(&n, p, sizeof(n));
            const unsigned char* name = p + sizeof(n);
            const unsigned char* desc = name + up(n.n_namesz);
            if (desc + n.n_descsz > end)
              break;
            if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              for (std::size_t b = 0; b < n.n_descsz; ++b) {
                char two[3];
                std::snprintf(two, sizeof(two), "%02x", desc[b]);
                s->id += two;
              }
              return 1;
            }
            p = desc + up(n.n_descsz);
          }
        }
        return 1;
      },
      &search);
  if (!search.id.empty())
    return search.id;
  Dl_info info{};
  struct stat st {};
  if (dladdr(reinterpret_cast<void*>(&buildIdentity), &info) && info.dli_fname &&
      stat(info.dli_fname, &st) == 0)
    return std::string(info.dli_fname) + ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  return "unknown";
}

bool readWholeFile(const std::string& path, std::string& out, int* err = nullptr);

/// ptxas's version, remembered per binary (path, size, mtime, inode) in this
/// process and in <cacheDir>/ptxas-<hash>.version.
std::string ptxasIdentity(const std::string& cacheDir) {
  std::string path;
  if (!ptxasAvailable(&path))  // (a TESSEL_PTXAS that names nothing: its own key, never a hit of
    return envString("TESSEL_PTXAS").empty() ? "none" : "missing " + path;  // a toolkit-less entry)
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    return "none";
  const std::string binary = path + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) +
                             "." + std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(st.st_ino);
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(binary); it != known.end())
    return it->second;
  const std::string memo = cacheDir.empty() ? "" : cacheDir + "/ptxas-" + hex16(xxh64(binary)) + ".version";
  std::string text;
  // The memo echoes the binary it describes: a stale or foreign file is ignored.
  if (!memo.empty() && readWholeFile(memo, text) && text.rfind(binary + "\n", 0) == 0 && text.back() == '\n') {
    text = text.substr(binary.size() + 1, text.size() - binary.size() - 2);
  } else {
    try {
      text = ptxasVersion();
    } catch (const tessel::error&) {
      text = "unknown";  // the compile will report ptxas's failure
    }
    if (!memo.empty()) {
      try {
        createDirectories(cacheDir);  // the first compile's entry comes later
        writeFileAtomic(memo, binary + "\n" + text + "\n");
      } catch (const tessel::error&) {
        // An unwritable cache directory is reported when the entry is written.
      }
    }
  }
  std::string id = path + " " + text;
  known.emplace(binary, id);
  return id;
}

}  // namespace

std::string optionsKey(const options& o) {
  std::string key;
  key += "schedule=" + std::string(to_string(o.schedule)) + ";";
  key += "stages=" + std::to_string(o.stages) + ";";
  key += "cluster=" + std::to_string(o.cluster[0]) + "x" + std::to_string(o.cluster[1]) + ";";
  key += "swizzle=" + std::to_string(o.swizzle) + ";";
  key += "raster=" + std::to_string(o.raster_group) + ";";
  key += "decomposition=" + std::string(decompositionKeyName(o.decomposition)) + ";";
  key += "debug=" + std::to_string(o.debug || knobs().debug) + ";";
  key += "contract=" + std::to_string(o.fp_contract) + ";";
  return key;
}

std::string cacheToolchainIdentity(const std::string& cacheDir) {
  static const std::string build = buildIdentity();  // fixed for the process
  return "tessel=" TESSEL_VERSION " build=" + build + "\nptxas=" + ptxasIdentity(cacheDir) +
         "\narch=" + CompiledKernel{}.arch + "\n";
}

std::string cacheEntryPath(const std::string& dir, std::string_view key) {
  // (The echoed key catches a collision if one happens.)
  return dir + "/" + hash128Hex(key) + kEntrySuffix;
}

namespace {
/// cacheEntryPathFor with the traced text's hash already computed.
std::string entryPathForSource(const std::string& dir, std::string_view fullKey, std::uint64_t sourceHash) {
  char source[32];
  std::snprintf(source, sizeof source, "\nsource-hash=%016llx", static_cast<unsigned long long>(sourceHash));
  return cacheEntryPath(dir, std::string(fullKey) + source);
}
}  // namespace

std::string cacheEntryPathFor(const std::string& dir, std::string_view fullKey, std::string_view tracedText) {
  return entryPathForSource(dir, fullKey, xxh64(tracedText));
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

namespace {

constexpr char kMagic[8] = {'T', 'E', 'S', 'S', 'E', 'L', 'K', 'C'};
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 8;

class Writer {
public:
  void u8(std::uint8_t v) { out.push_back(static_cast<char>(v)); }
  void u16(std::uint16_t v) { raw(&v, 2); }
  void u32(std::uint32_t v) { raw(&v, 4); }
  void i32(std::int32_t v) { raw(&v, 4); }
  void u64(std::uint64_t v) { raw(&v, 8); }
  void str(std::string_view s) {
    u64(s.size());
    out.append(s);
  }
  /// A named record whose body `fill` writes.
  template <class F>
  void record(std::string_view name, F fill) {
    u16(static_cast<std::uint16_t>(name.size()));
    out.append(name);
    Writer body;
    fill(body);
    str(body.out);
  }
  std::string out;

private:
  void raw(const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }  // little-endian host
};

/// Reads primitives from a byte range; any read past the end sets `bad` and
/// yields zeros, so decoders check once at the end.
class Reader {
public:
  explicit Reader(std::string_view d) : data(d) {}
  std::uint8_t u8() { return static_cast<std::uint8_t>(take(1)[0]); }
  std::uint16_t u16() { return as<std::uint16_t>(); }
  std::uint32_t u32() { return as<std::uint32_t>(); }
  std::int32_t i32() { return as<std::int32_t>(); }
  std::uint64_t u64() { return as<std::uint64_t>(); }
  std::string_view bytes(std::uint64_t n) {
    if (n > data.size() - pos) {
      bad = true;
      pos = data.size();
      return {};
    }
    std::string_view s = data.substr(pos, n);
    pos += n;
    return s;
  }
  std::string str() { return std::string(bytes(u64())); }
  /// A count of items of at least `minItemBytes` each that fit in what is left.
  std::uint32_t count(std::size_t minItemBytes) {
    std::uint32_t n = u32();
    if (n > (data.size() - pos) / std::max<std::size_t>(minItemBytes, 1))
      bad = true;
    return bad ? 0 : n;
  }
  bool done() const { return pos == data.size(); }
  bool bad = false;

private:
  std::string_view take(std::size_t n) {
    static const char zeros[8] = {};
    if (n > data.size() - pos) {
      bad = true;
      pos = data.size();
      return std::string_view(zeros, n);
    }
    std::string_view s = data.substr(pos, n);
    pos += n;
    return s;
  }
  template <class T>
  T as() {
    T v;
    std::memcpy(&v, take(sizeof(T)).data(), sizeof(T));
    return v;
  }
  std::string_view data;
  std::size_t pos = 0;
};

std::uint64_t checksum(std::string_view key, std::string_view payload) { return xxh64(payload, xxh64(key)); }

}  // namespace

std::string encodeCacheEntry(std::string_view key, std::uint64_t sourceHash, const CompiledKernel& k) {
  Writer p;
  p.record("source-hash", [&](Writer& w) { w.u64(sourceHash); });
  p.record("name", [&](Writer& w) { w.out = k.name; });
  p.record("arch", [&](Writer& w) { w.out = k.arch; });
  p.record("schedule", [&](Writer& w) { w.out = k.schedule; });
  p.record("variant", [&](Writer& w) { w.out = k.variant; });
  p.record("args", [&](Writer& w) {
    w.u32(static_cast<std::uint32_t>(k.args.size()));
    for (const ArgSpec& a : k.args) {
      w.u8(static_cast<std::uint8_t>(a.type));
      w.i32(a.rank);
      w.u8(a.loadedByTma);
      w.u8(a.stored);
    }
  });
  p.record("params", [&](Writer& w) {
    w.u32(static_cast<std::uint32_t>(k.params.size()));
    for (const ParamSpec& q : k.params) {
      w.u8(static_cast<std::uint8_t>(q.kind));
      w.i32(q.arg);
      w.i32(q.dim);
      for (std::uint32_t b : q.box)
        w.u32(b);
      w.i32(q.swizzleBytes);
      w.i32(q.contiguousDim);
      w.u8(q.store);
      w.u8(q.clipRows);
    }
  });
  p.record("size-contracts", [&](Writer& w) {
    w.u32(static_cast<std::uint32_t>(k.sizeContracts.size()));
    for (const SizeContract& c : k.sizeContracts) {
      w.i32(c.argA);
      w.i32(c.dimA);
      w.i32(c.argB);
      w.i32(c.dimB);
      w.str(c.whereA);
      w.str(c.whereB);
    }
  });
  p.record("launch", [&](Writer& w) {
    w.u32(k.blockThreads);
    w.u32(k.dynamicSmemBytes);
    for (unsigned c : k.cluster)
      w.u32(c);
    w.u8(k.persistent);
    w.u64(k.workspaceSlotBytes);
  });
  p.record("ptx", [&](Writer& w) { w.out = k.ptx; });
  p.record("cubin", [&](Writer& w) { w.out = k.cubin; });
  p.record("ptxas-log", [&](Writer& w) { w.out = k.ptxasLog; });
  p.record("stages", [&](Writer& w) {
    w.u32(static_cast<std::uint32_t>(k.stages.size()));
    for (const auto& [name, text] : k.stages) {
      w.str(name);
      w.str(text);
    }
  });

  Writer file;
  file.out.append(kMagic, sizeof(kMagic));
  file.u32(kEntryFormatVersion);
  file.u32(0);
  file.u64(key.size());
  file.u64(p.out.size());
  file.u64(checksum(key, p.out));
  file.out.append(key);
  file.out.append(p.out);
  return std::move(file.out);
}

std::optional<DecodedEntry> decodeCacheEntry(std::string_view data, std::string_view expectedKey,
                                             std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<DecodedEntry> {
    if (why)
      *why = std::move(reason);
    return std::nullopt;
  };
  if (data.size() < kHeaderBytes)
    return fail("truncated: " + std::to_string(data.size()) + " bytes, shorter than the header");
  if (std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0)
    return fail("not a tessel kernel cache entry (bad magic)");
  Reader header(data.substr(sizeof(kMagic), kHeaderBytes - sizeof(kMagic)));
  DecodedEntry e;
  e.formatVersion = header.u32();
  header.u32();
  const std::uint64_t keyBytes = header.u64(), payloadBytes = header.u64(), sum = header.u64();
  if (e.formatVersion != kEntryFormatVersion)
    return fail("format version " + std::to_string(e.formatVersion) + ", expected " +
                std::to_string(kEntryFormatVersion));
  const std::uint64_t body = data.size() - kHeaderBytes;
  if (keyBytes > body || payloadBytes > body - keyBytes)
    return fail("truncated: " + std::to_string(data.size()) + " bytes, the header announces " +
                std::to_string(kHeaderBytes + keyBytes + payloadBytes));
  if (keyBytes + payloadBytes != body)
    return fail(std::to_string(body - keyBytes - payloadBytes) + " bytes after the payload");
  std::string_view key = data.substr(kHeaderBytes, keyBytes);
  std::string_view payload = data.substr(kHeaderBytes + keyBytes);
  if (checksum(key, payload) != sum)
    return fail("checksum mismatch");
  if (!expectedKey.empty() && key != expectedKey)
    return fail("written for another key (a hash collision or a foreign file)");
  e.key = std::string(key);

  std::map<std::string, std::string_view, std::less<>> records;
  Reader r(payload);
  while (!r.done() && !r.bad) {
    std::string_view name = r.bytes(r.u16());
    std::string_view value = r.bytes(r.u64());
    if (!r.bad)
      records.emplace(std::string(name), value);
  }
  if (r.bad)
    return fail("malformed payload");
  const char* required[] = {"source-hash", "name",   "arch", "schedule",  "variant", "args",  "params",
                            "size-contracts", "launch", "ptx", "cubin", "ptxas-log", "stages"};
  for (const char* name : required)
    if (!records.count(name))
      return fail(std::string("record '") + name + "' missing");
  auto text = [&](const char* name) { return std::string(records.find(name)->second); };
  auto decode = [&](const char* name, auto body) {
    Reader rr(records.find(name)->second);
    body(rr);
    return !rr.bad && rr.done();
  };
  CompiledKernel& k = e.kernel;
  k.name = text("name");
  k.arch = text("arch");
  k.schedule = text("schedule");
  k.variant = text("variant");
  k.ptx = text("ptx");
  k.cubin = text("cubin");
  k.ptxasLog = text("ptxas-log");
  bool ok = decode("source-hash", [&](Reader& rr) { e.sourceHash = rr.u64(); });
  ok = ok && decode("args", [&](Reader& rr) {
         for (std::uint32_t i = 0, n = rr.count(7); i < n; ++i) {
           ArgSpec a;
           std::uint8_t type = rr.u8();
           // Any enumerator of dtype (dtypeName's switch covers them all; a
           // bound on one enumerator missed the fp8 types added after it).
           if (std::strcmp(dtypeName(static_cast<dtype>(type)), "?") == 0)
             rr.bad = true;
           a.type = static_cast<dtype>(type);
           a.rank = rr.i32();
           a.loadedByTma = rr.u8() != 0;
           a.stored = rr.u8() != 0;
           k.args.push_back(a);
         }
       });
  ok = ok && decode("params", [&](Reader& rr) {
         for (std::uint32_t i = 0, n = rr.count(30); i < n; ++i) {
           ParamSpec q;
           std::uint8_t kind = rr.u8();
           if (kind > static_cast<std::uint8_t>(ParamSpec::Kind::Scalar))
             rr.bad = true;
           q.kind = static_cast<ParamSpec::Kind>(kind);
           q.arg = rr.i32();
           q.dim = rr.i32();
           for (std::uint32_t& b : q.box)
             b = rr.u32();
           q.swizzleBytes = rr.i32();
           q.contiguousDim = rr.i32();
           q.store = rr.u8() != 0;
           q.clipRows = rr.u8() != 0;
           k.params.push_back(q);
         }
       });
  ok = ok && decode("size-contracts", [&](Reader& rr) {
         for (std::uint32_t i = 0, n = rr.count(32); i < n; ++i) {
           SizeContract c;
           c.argA = rr.i32();
           c.dimA = rr.i32();
           c.argB = rr.i32();
           c.dimB = rr.i32();
           c.whereA = rr.str();
           c.whereB = rr.str();
           k.sizeContracts.push_back(std::move(c));
         }
       });
  ok = ok && decode("launch", [&](Reader& rr) {
         k.blockThreads = rr.u32();
         k.dynamicSmemBytes = rr.u32();
         for (unsigned& c : k.cluster)
           c = rr.u32();
         k.persistent = rr.u8() != 0;
         k.workspaceSlotBytes = rr.u64();
       });
  ok = ok && decode("stages", [&](Reader& rr) {
         for (std::uint32_t i = 0, n = rr.count(16); i < n; ++i) {
           std::string name = rr.str();
           k.stages.emplace_back(std::move(name), rr.str());
         }
       });
  if (!ok)
    return fail("malformed record");
  try {
    validateCompiledKernel(k);
  } catch (const tessel::error& err) {
    return fail(std::string("the kernel is inconsistent: ") + err.what());
  }
  return e;
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

namespace {

bool readWholeFile(const std::string& path, std::string& out, int* err) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (err)
      *err = errno;
    return false;
  }
  struct stat st {};
  bool ok = fstat(fd, &st) == 0;
  if (ok) {
    out.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (ok && done < out.size()) {
      ssize_t n = read(fd, out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        ok = n == 0;  // a file that shrank while read: what was there is decoded (and rejected)
        out.resize(done);
        break;
      }
      done += static_cast<std::size_t>(n);
    }
  }
  if (!ok && err)
    *err = errno;
  close(fd);
  return ok;
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::atomic<bool> warnedCorrupt{false};
std::atomic<bool> warnedTooSmall{false};  ///< a cap below one entry, said once per process
std::mutex warnedDirsMutex;
std::set<std::string> warnedDirs;  ///< directories found unwritable (no more writes there)

bool unwritable(const std::string& dir) {
  std::lock_guard<std::mutex> lock(warnedDirsMutex);
  return warnedDirs.count(dir) != 0;
}

void warnUnwritable(const std::string& dir, const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(warnedDirsMutex);
    if (!warnedDirs.insert(dir).second)
      return;
  }
  std::string line = what;
  if (line.rfind("tessel: ", 0) == 0)
    line = line.substr(8);
  std::fprintf(stderr,
               "tessel: warning: the kernel cache directory '%s' is not writable (%s); compiling without the "
               "on-disk cache (set TESSEL_CACHE_DIR, or TESSEL_DISABLE_CACHE=1 to silence this)\n",
               dir.c_str(), line.c_str());
}

}  // namespace

void resetDiskCacheWarningsForTesting() {
  warnedCorrupt = false;
  warnedTooSmall = false;
  std::lock_guard<std::mutex> lock(warnedDirsMutex);
  warnedDirs.clear();
}

std::optional<std::uint64_t> parseByteSize(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  std::size_t digits = 0;
  std::uint64_t value = 0;
  for (; digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])); ++digits) {
    if (value > (UINT64_MAX - 9) / 10)
      return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(text[digits] - '0');
  }
  if (digits == 0)
    return std::nullopt;
  std::string suffix(text.substr(digits));
  std::transform(suffix.begin(), suffix.end(), suffix.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::pair<const char*, int> units[] = {{"", 0}, {"b", 0}, {"k", 1}, {"kb", 1}, {"kib", 1},
                                                      {"m", 2}, {"mb", 2}, {"mib", 2}, {"g", 3}, {"gb", 3},
                                                      {"gib", 3}, {"t", 4}, {"tb", 4}, {"tib", 4}};
  for (const auto& [name, power] : units) {
    if (suffix != name)
      continue;
    for (int i = 0; i < power; ++i) {
      if (value > UINT64_MAX / 1024)
        return std::nullopt;
      value *= 1024;
    }
    return value;
  }
  return std::nullopt;
}

DiskCacheConfig diskCacheConfig() {
  Knobs k = knobs();
  DiskCacheConfig c;
  c.dir = k.cacheDir;
  c.enabled = !k.disableCache && !c.dir.empty();
  if (std::string cap = envString("TESSEL_CACHE_MAX_BYTES"); !cap.empty()) {
    if (std::optional<std::uint64_t> bytes = parseByteSize(cap)) {
      c.maxBytes = *bytes;
    } else {
      static std::once_flag once;
      std::call_once(once, [&] {
        std::fprintf(stderr,
                     "tessel: warning: TESSEL_CACHE_MAX_BYTES='%s' is not a size (bytes, or a number with "
                     "K, M, G or T); using 1G\n",
                     cap.c_str());
      });
    }
  }
  return c;
}

std::vector<CacheEntryFile> listCacheEntries(const std::string& dir) {
  std::vector<CacheEntryFile> entries;
  DIR* d = opendir(dir.c_str());
  if (!d)
    return entries;
  while (dirent* e = readdir(d)) {
    std::string_view name(e->d_name);
    if (!endsWith(name, kEntrySuffix))
      continue;
    CacheEntryFile f;
    f.path = dir + "/" + std::string(name);
    struct stat st {};
    if (stat(f.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;  // removed meanwhile by another process
    f.bytes = static_cast<std::uint64_t>(st.st_size);
    f.accessNs = static_cast<std::int64_t>(st.st_atim.tv_sec) * 1000000000 + st.st_atim.tv_nsec;
    entries.push_back(std::move(f));
  }
  closedir(d);
  std::sort(entries.begin(), entries.end(), [](const CacheEntryFile& a, const CacheEntryFile& b) {
    return a.accessNs != b.accessNs ? a.accessNs < b.accessNs : a.path < b.path;
  });
  return entries;
}

namespace {
/// Removes the temporary files writeFileAtomic leaves behind when its process
/// dies between mkstemp and rename; `olderThanNs` spares live writers.
void removeTemporaries(const std::string& dir, std::int64_t olderThanNs) {
  DIR* d = opendir(dir.c_str());
  if (!d)
    return;
  const std::int64_t now = nowNs();
  while (dirent* e = readdir(d)) {
    std::string_view name(e->d_name);
    if (name.find(std::string(kEntrySuffix) + ".tmp.") == std::string_view::npos &&
        name.find(".version.tmp.") == std::string_view::npos && name.find(".tune.tmp.") == std::string_view::npos)
      continue;
    std::string path = dir + "/" + std::string(name);
    struct stat st {};
    if (stat(path.c_str(), &st) == 0 &&
        now - (static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec) >= olderThanNs)
      unlink(path.c_str());
  }
  closedir(d);
}
}  // namespace

std::size_t evictCacheEntries(const std::string& dir, std::uint64_t maxBytes) {
  removeTemporaries(dir, std::int64_t(3600) * 1000000000);
  std::vector<CacheEntryFile> entries = listCacheEntries(dir);
  std::uint64_t total = 0;
  for (const CacheEntryFile& e : entries)
    total += e.bytes;
  std::size_t removed = 0;
  for (const CacheEntryFile& e : entries) {
    if (total <= maxBytes)
      break;
    if (unlink(e.path.c_str()) == 0)
      ++removed;
    total -= e.bytes;  // removed here or by another process: gone either way
  }
  return removed;
}

std::size_t clearCache(const std::string& dir) {
  std::size_t removed = 0;
  for (const CacheEntryFile& e : listCacheEntries(dir))
    removed += unlink(e.path.c_str()) == 0;
  removeTemporaries(dir, 0);
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string_view name(e->d_name);
      // The ptxas version memos, and ts::autotune's saved choices (Autotune.h).
      if ((name.rfind("ptxas-", 0) == 0 && endsWith(name, ".version")) || endsWith(name, ".tune"))
        unlink((dir + "/" + std::string(name)).c_str());
    }
    closedir(d);
  }
  return removed;
}

//===----------------------------------------------------------------------===//
// Lookup and store
//===----------------------------------------------------------------------===//

CompiledKernel compileWithDiskCache(const std::string& key, std::string_view tracedText, bool verbose,
                                    const std::function<CompiledKernel()>& compile, bool* hit) {
  if (hit)
    *hit = false;
  const DiskCacheConfig config = diskCacheConfig();
  if (!config.enabled)
    return compile();

  const auto start = std::chrono::steady_clock::now();
  const std::string fullKey = cacheToolchainIdentity(config.dir) + key;
  const std::uint64_t sourceHash = xxh64(tracedText);  // (hashed once: the file name and the check)
  const std::string path = entryPathForSource(config.dir, fullKey, sourceHash);
  std::string data;
  if (readWholeFile(path, data)) {
    std::string why;
    std::optional<DecodedEntry> entry = decodeCacheEntry(data, fullKey, &why);
    if (entry && entry->sourceHash == sourceHash) {
      // LRU: the access time is set explicitly (mounts with noatime or
      // relatime would not); a read-only cache directory just keeps its times.
      const timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
      utimensat(AT_FDCWD, path.c_str(), times, 0);
      if (verbose) {
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "tessel: '%s'%s from the disk cache (%s, %.1f ms)\n", entry->kernel.name.c_str(),
                     entry->kernel.variant.empty() ? "" : (" variant '" + entry->kernel.variant + "'").c_str(),
                     path.c_str(), ms);
      }
      if (hit)
        *hit = true;
      entry->kernel.timings.emplace_back(
          "disk cache hit", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      return std::move(entry->kernel);
    }
    // A damaged entry is worth one line per process. (Another source of the
    // same program has its own file: a source hash that differs here is a
    // collision of the file names' 128-bit hashes, replaced silently.)
    if (!entry && !warnedCorrupt.exchange(true))
      std::fprintf(stderr, "tessel: warning: ignoring the kernel cache entry %s (%s); recompiling and replacing it\n",
                   path.c_str(), why.c_str());
  }

  const double lookupMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CompiledKernel k = compile();
  k.timings.insert(k.timings.begin(), {"disk cache miss", lookupMs});
  const auto storeStart = std::chrono::steady_clock::now();
  auto stored = [&] {
    k.timings.emplace_back(
        "disk cache store",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - storeStart).count());
  };
  if (unwritable(config.dir))
    return k;
  try {
    createDirectories(config.dir);
    writeFileAtomic(path, encodeCacheEntry(fullKey, sourceHash, k));
  } catch (const tessel::error& e) {
    warnUnwritable(config.dir, e.what());
    return k;
  }
  evictCacheEntries(config.dir, config.maxBytes);
  // A cap below one entry evicts what was just written: the cache then never hits. Said once.
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 && errno == ENOENT && !warnedTooSmall.exchange(true))
    std::fprintf(stderr,
                 "tessel: warning: TESSEL_CACHE_MAX_BYTES (%llu bytes) is smaller than the entry of kernel '%s'; the "
                 "on-disk cache keeps nothing (raise it, or set TESSEL_DISABLE_CACHE=1)\n",
                 static_cast<unsigned long long>(config.maxBytes), k.name.c_str());
  stored();
  return k;
}

}  // namespace tessel::runtime
