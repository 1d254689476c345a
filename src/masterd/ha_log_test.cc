#include "masterd/ha_log.h"

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <cstdio>
#include <random>
#include <thread>

#include <zlib.h>

#include "common/byte_io.h"
#include "common/test_seed.h"
#include "eviction/policy.h"
#include "ha/fake_etcd.h"
#include "master/master_test_util.h"
#include "masterd/journal_test_util.h"

using namespace mc;
using namespace mc::master;
using mc::master::testing::Client;
using mc::master::testing::Segment;
using mc::masterd::testing::Fingerprint;

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kNow = 1000000;
constexpr uint64_t kWaitUs = 10000000;  // a bound on a wait that should take milliseconds

ha::HaKeys Keys() { return *ha::HaKeys::For("pool"); }

std::unique_ptr<MasterState> NewState(StateListener* l) {
  Options o;
  o.stripe_size_bytes = kMiB;
  return std::make_unique<MasterState>(o, MakeEvictionPolicy("lru", 0), l);
}

// A leader (its HaLog as the state's listener) on a fake etcd.
struct Group {
  ManualClock clock;
  ha::FakeEtcd etcd{clock};
  ha::Election election{etcd, Keys(), "leader:1", 5};
  ha::Term term = **election.TryAcquire();
  masterd::HaLog log{etcd, Keys(), clock, {.snapshot_every_entries = 1000000}};
  std::unique_ptr<MasterState> state = NewState(&log);

  explicit Group(uint64_t snapshot_every = 1000000)
      : Group(masterd::HaLogOptions{.snapshot_every_entries = snapshot_every}) {}
  explicit Group(masterd::HaLogOptions options) : log(etcd, Keys(), clock, options) {
    log.Begin(term, masterd::HaImage());
  }
  // A standby's image, followed from the log (and snapshot) to its end.
  masterd::HaImage Follow() {
    ha::FencedLog reader(etcd, Keys());
    masterd::HaImage image;
    auto snap = reader.ReadSnapshot();
    REQUIRE(snap.ok());
    if (snap->has_value()) {
      REQUIRE(image.Restore((*snap)->data).ok());
      image.set_index((*snap)->index);
    }
    for (;;) {
      auto entries = reader.ReadAfter(image.index());
      REQUIRE(entries.ok());
      if (entries->empty()) break;
      for (const auto& e : *entries) {
        REQUIRE(e.index == image.index() + 1);
        REQUIRE(image.ApplyEntry(e.data).ok());
        image.set_index(e.index);
      }
    }
    return image;
  }
  std::string StandbyFingerprint() {
    auto fresh = NewState(nullptr);
    masterd::HaImage image = Follow();
    auto dropped = image.LoadInto(*fresh, kNow);
    REQUIRE(dropped.ok());
    return Fingerprint(*fresh);
  }
};

void Mount(MasterState& s, int i) {
  msg::SegmentDesc d = Segment("s" + std::to_string(i), 64 * kMiB);
  d.access_key = "key-" + std::to_string(i);
  REQUIRE(s.MountSegment({Client(i + 1), d}, kNow).ok());
}

}  // namespace

TEST_CASE("HA records and snapshots round-trip, and damaged entries are refused") {
  masterd::HaRecord mount{.kind = masterd::HaRecord::Kind::kMount};
  mount.segment.desc = Segment("s1", 64 * kMiB);
  mount.segment.owner = Client(3);
  masterd::HaRecord commit{.kind = masterd::HaRecord::Kind::kCommit};
  commit.object = {.key = "k", .size_bytes = 10, .complete = true, .soft_pin = true,
                   .replicas = {{{"s1", 4096, 10}}}};
  const std::string entry = masterd::EncodeHaEntry({mount, commit});
  auto back = masterd::DecodeHaEntry(entry);
  REQUIRE(back.ok());
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].segment.desc.name == "s1");
  CHECK((*back)[0].segment.owner == Client(3));
  CHECK((*back)[1].object.replicas[0][0].offset == 4096);
  CHECK((*back)[1].object.soft_pin);
  for (size_t cut = 0; cut < entry.size(); ++cut) {
    CHECK_FALSE(masterd::DecodeHaEntry(entry.substr(0, cut)).ok());
  }
  CHECK_FALSE(masterd::DecodeHaEntry(entry + "x").ok());
  std::string bad_kind = entry;
  bad_kind[4] = 9;
  CHECK_FALSE(masterd::DecodeHaEntry(bad_kind).ok());
}

namespace {

// A commit in the first layout (kind 3), as builds before the packed form
// wrote it.
void EncodeFirstLayoutCommit(const ObjectDump& o, std::string* out) {
  ByteWriter w(out);
  w.U8(3);
  w.Str(o.key);
  w.U64(o.size_bytes);
  w.Bool(o.complete);
  w.Bool(o.soft_pin);
  w.U32(static_cast<uint32_t>(o.replicas.size()));
  for (const auto& replica : o.replicas) {
    w.U32(static_cast<uint32_t>(replica.size()));
    for (const BufferLocation& b : replica) {
      w.Str(b.segment_name);
      w.U64(b.offset);
      w.U64(b.size_bytes);
    }
  }
}

bool SameObject(const ObjectDump& a, const ObjectDump& b) {
  if (a.key != b.key || a.size_bytes != b.size_bytes || a.complete != b.complete ||
      a.soft_pin != b.soft_pin || a.replicas.size() != b.replicas.size())
    return false;
  for (size_t i = 0; i < a.replicas.size(); ++i) {
    if (a.replicas[i].size() != b.replicas[i].size()) return false;
    for (size_t j = 0; j < a.replicas[i].size(); ++j) {
      const BufferLocation &x = a.replicas[i][j], &y = b.replicas[i][j];
      if (x.segment_name != y.segment_name || x.offset != y.offset || x.size_bytes != y.size_bytes)
        return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("commits are written packed, in about half the bytes, and the first layout still reads") {
  std::mt19937_64 rng(TestSeed("packed commits"));
  const std::vector<std::string> segments = {"127.0.0.1:40123", "127.0.0.1:40124", ""};
  std::vector<masterd::HaRecord> records;
  std::string first_layout;
  ByteWriter(&first_layout).U32(0);
  for (int i = 0; i < 300; ++i) {
    masterd::HaRecord rec{.kind = masterd::HaRecord::Kind::kCommit};
    char key[32];
    std::snprintf(key, sizeof key, "bench-%016llx", static_cast<unsigned long long>(rng()));
    rec.object.key = key;
    rec.object.size_bytes = i % 7 == 0 ? rng() : 4096;
    rec.object.complete = rng() % 4 != 0;
    rec.object.soft_pin = rng() % 5 == 0;
    // Mostly one replica of one buffer on the segment before; some with
    // several replicas and buffers across segments, and an empty name.
    const int replicas = i % 10 == 0 ? 1 + static_cast<int>(rng() % 3) : 1;
    for (int r = 0; r < replicas; ++r) {
      auto& replica = rec.object.replicas.emplace_back();
      const int buffers = i % 13 == 0 ? 1 + static_cast<int>(rng() % 4) : 1;
      for (int b = 0; b < buffers; ++b) {
        const std::string& seg = segments[i % 50 == 0 ? rng() % 3 : (i / 40) % 2];
        replica.push_back({seg, (rng() % (uint64_t{50} << 30)) & ~uint64_t{4095}, 4096});
      }
    }
    EncodeFirstLayoutCommit(rec.object, &first_layout);
    records.push_back(std::move(rec));
  }
  StoreLe32(first_layout.data(), static_cast<uint32_t>(records.size()));

  const std::string packed = masterd::EncodeHaEntry(records);
  MESSAGE("300 commits: first layout " << first_layout.size() << " B, packed " << packed.size()
                                       << " B");
  CHECK(packed.size() * 2 < first_layout.size() + first_layout.size() / 5);  // under 60%

  using Entries = std::initializer_list<const std::string*>;
  for (const std::string* entry : Entries{&packed, &first_layout}) {
    auto back = masterd::DecodeHaEntry(*entry);
    REQUIRE(back.ok());
    REQUIRE(back->size() == records.size());
    for (size_t i = 0; i < records.size(); ++i) {
      CHECK((*back)[i].kind == masterd::HaRecord::Kind::kCommit);
      CHECK(SameObject((*back)[i].object, records[i].object));
    }
  }
  // The benchmark's objects: a 22-byte key, 4 KiB, one buffer, one store.
  std::vector<masterd::HaRecord> bench;
  std::string bench_first_layout;
  for (int i = 0; i < 1000; ++i) {
    masterd::HaRecord rec{.kind = masterd::HaRecord::Kind::kCommit};
    char key[32];
    std::snprintf(key, sizeof key, "bench-%016llx", static_cast<unsigned long long>(rng()));
    const uint64_t offset = (rng() % (uint64_t{50} << 30)) & ~uint64_t{4095};
    rec.object = {.key = key, .size_bytes = 4096, .complete = true,
                  .replicas = {{{"127.0.0.1:40123", offset, 4096}}}};
    EncodeFirstLayoutCommit(rec.object, &bench_first_layout);
    bench.push_back(std::move(rec));
  }
  const size_t bench_packed = masterd::EncodeHaEntry(bench).size() - 4;
  MESSAGE("a benchmark commit: first layout " << bench_first_layout.size() / 1000.0
                                              << " B, packed " << bench_packed / 1000.0 << " B");
  CHECK(bench_packed * 2 < bench_first_layout.size());
  // Entries cut from the same records stand alone: each names its first
  // segment in full.
  for (size_t start = 0; start < records.size();) {
    const std::vector<masterd::HaRecord> rest(records.begin() + start, records.end());
    size_t taken = 0;
    const std::string entry = masterd::EncodeHaEntryUpTo(rest, 700, &taken);
    REQUIRE(taken > 0);
    auto back = masterd::DecodeHaEntry(entry);
    REQUIRE(back.ok());
    REQUIRE(back->size() == taken);
    for (size_t i = 0; i < taken; ++i) CHECK(SameObject((*back)[i].object, rest[i].object));
    start += taken;
  }
  // A packed commit that refers back to a segment when none came before.
  std::string orphan;
  ByteWriter w(&orphan);
  w.U32(1);
  w.U8(7);
  w.VarStr("k");
  w.Var(10);
  w.U8(1);
  w.Var(1);
  w.Var(1);
  w.Var(0);  // "the segment before"
  w.Var(0);
  w.Var(10);
  auto refused = masterd::DecodeHaEntry(orphan);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("refers to no earlier segment") != std::string::npos);
  orphan[orphan.size() - 3] = 0x7f;  // a name longer than what is left
  CHECK_FALSE(masterd::DecodeHaEntry(orphan).ok());
}

namespace {

// The commits of a snapshot, by key (every other record is a mount).
std::map<std::string, ObjectDump> SnapshotObjects(const masterd::HaImage& image) {
  auto records = masterd::DecodeHaEntry(image.Snapshot());
  REQUIRE(records.ok());
  std::map<std::string, ObjectDump> out;
  for (auto& r : *records) {
    if (r.kind != masterd::HaRecord::Kind::kCommit) continue;
    CHECK(out.count(r.object.key) == 0);
    out[r.object.key] = std::move(r.object);
  }
  return out;
}

}  // namespace

TEST_CASE("the image holds what the log says through upserts, removes, snapshots and restores") {
  std::mt19937_64 rng(TestSeed("image keeps the log"));
  const std::vector<std::string> segments = {"127.0.0.1:40123", "a-segment-name-longer-than-sso", ""};
  std::map<std::string, ObjectDump> expected;
  masterd::HaImage image;
  for (int round = 0; round < 40; ++round) {
    std::vector<masterd::HaRecord> entry;
    for (int i = 0; i < 50; ++i) {
      const std::string key = "k" + std::to_string(rng() % 300);
      if (rng() % 3 == 0) {
        entry.push_back({.kind = masterd::HaRecord::Kind::kRemove, .name = key});
        expected.erase(key);
        continue;
      }
      masterd::HaRecord rec{.kind = masterd::HaRecord::Kind::kCommit};
      rec.object.key = key;
      rec.object.size_bytes = 1 + rng() % (uint64_t{1} << 40);
      rec.object.complete = true;
      rec.object.soft_pin = rng() % 4 == 0;
      rec.object.listener_tag = 1 + rng() % 9;  // not part of the image
      const int replicas = 1 + static_cast<int>(rng() % 3);
      for (int r = 0; r < replicas; ++r) {
        auto& replica = rec.object.replicas.emplace_back();
        for (int b = 1 + static_cast<int>(rng() % 3); b > 0; --b)
          replica.push_back({segments[rng() % 3], rng() % (uint64_t{1} << 45), 1 + rng() % 4096});
      }
      expected[key] = rec.object;
      entry.push_back(std::move(rec));
    }
    // Half the rounds as a standby applies them (an entry's bytes, with
    // back-references), half as the leader does (records).
    if (round % 2 == 0) {
      REQUIRE(image.ApplyEntry(masterd::EncodeHaEntry(entry)).ok());
    } else {
      for (const auto& r : entry) REQUIRE(image.Apply(r).ok());
    }
    REQUIRE(image.objects() == expected.size());
    if (round % 10 != 9) continue;
    auto seen = SnapshotObjects(image);
    REQUIRE(seen.size() == expected.size());
    for (const auto& [key, object] : expected) {
      REQUIRE(seen.count(key) == 1);
      CHECK(SameObject(seen[key], object));
    }
    masterd::HaImage restored;
    REQUIRE(restored.Restore(image.Snapshot()).ok());
    CHECK(restored.objects() == expected.size());
    CHECK(SnapshotObjects(restored).size() == expected.size());
    image = std::move(restored);  // go on from the restored image
  }
}

TEST_CASE("a standby that follows the HA log rebuilds the leader's durable state exactly") {
  Group g;
  std::mt19937_64 rng(TestSeed("ha log follow"));
  for (int i = 0; i < 3; ++i) Mount(*g.state, i);
  for (int i = 0; i < 80; ++i) {
    const std::string key = "k" + std::to_string(i);
    REQUIRE(g.state->PutStart({Client(1), key, 1 + rng() % (3 * kMiB), {1u + i % 2, i % 5 == 0}},
                              kNow).ok());
    if (i % 7 != 3) REQUIRE(g.state->PutEnd({Client(1), key}, kNow).ok());  // else in flight
    if (rng() % 4 == 0) (void)g.state->Remove({"k" + std::to_string(rng() % (i + 1)), true}, kNow);
  }
  REQUIRE(g.state->UnmountSegment({Client(3), "s2"}, kNow).ok());  // drops replicas on s2
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  CHECK(g.log.Released() == g.log.stats().appended);
  CHECK(g.StandbyFingerprint() == Fingerprint(*g.state));
  CHECK(g.log.stats().entries >= 1);
}

TEST_CASE("snapshots keep the log short and a standby starting late still catches up") {
  Group g(/*snapshot_every=*/3);
  Mount(*g.state, 0);
  // The sequencer applies and snapshots after the entries are released, and
  // a snapshot due while the last is written waits for it: one that lags
  // (a loaded sanitizer run) takes fewer, larger snapshots, as it should.
  // Waiting (bounded) after each put until it has caught up makes the
  // count the test's own: a snapshot within every three entries.
  auto catch_up = [&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kWaitUs);
    while (g.log.stats().entry_index - g.log.stats().snapshot_index >= 3 &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    return g.log.stats().entry_index - g.log.stats().snapshot_index < 3;
  };
  for (int i = 0; i < 200; ++i) {
    const std::string key = "k" + std::to_string(i % 40);
    (void)g.state->Remove({key, true}, kNow);
    REQUIRE(g.state->PutStart({Client(1), key, 4096, {1, false}}, kNow).ok());
    REQUIRE(g.state->PutEnd({Client(1), key}, kNow).ok());
    REQUIRE(g.log.WaitDurableFor(kWaitUs));  // one entry per put: many snapshots
    REQUIRE(catch_up());
  }
  CHECK(g.log.stats().snapshots >= 10);
  // leader key, snapshot key and its chunk, fewer than 3 entries past it
  CHECK(g.etcd.key_count() <= 6);
  CHECK(g.StandbyFingerprint() == Fingerprint(*g.state));
}

TEST_CASE("a leader whose term ended is fenced: nothing more is released") {
  Group g;
  Mount(*g.state, 0);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  const uint64_t released = g.log.Released();
  g.clock.AdvanceUs(6000000);  // the lease runs out unrenewed
  ha::Election other(g.etcd, Keys(), "other:1", 5);
  REQUIRE(other.TryAcquire()->has_value());
  REQUIRE(g.state->PutStart({Client(1), "late", 4096, {1, false}}, kNow).ok());
  REQUIRE(g.state->PutEnd({Client(1), "late"}, kNow).ok());
  CHECK_FALSE(g.log.WaitDurableFor(kWaitUs));
  CHECK(g.log.Failed());
  CHECK(g.log.Released() == released);
  CHECK(g.Follow().objects() == 0);
}

TEST_CASE("with etcd down the leader holds its replies, and releases them once etcd is back") {
  Group g;
  Mount(*g.state, 0);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  g.etcd.SetDown(true);
  REQUIRE(g.state->PutStart({Client(1), "k", 4096, {1, false}}, kNow).ok());
  REQUIRE(g.state->PutEnd({Client(1), "k"}, kNow).ok());
  const uint64_t ticket = g.log.stats().appended;
  CHECK_FALSE(g.log.WaitDurableFor(100000));
  CHECK(g.log.Released() < ticket);
  CHECK_FALSE(g.log.Failed());
  g.clock.AdvanceMs(300);  // the put's change waits 300 ms for etcd
  g.etcd.SetDown(false);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  CHECK(g.log.Released() == ticket);
  const masterd::HaLog::Stats s = g.log.stats();
  CHECK(s.retries >= 1);
  CHECK(g.Follow().objects() == 1);
  // Every entry is in both histograms once; the put's entry waited 300 ms
  // (the bucket up to 0.5 s), the mount's none.
  CHECK(s.commit_latency.count() == s.entries);
  CHECK(s.durable_latency.count() == s.entries);
  CHECK(s.durable_latency.buckets[8] >= 1);
  CHECK(s.durable_latency.buckets[0] >= 1);
  CHECK(s.durable_latency.sum >= 0.3);
  CHECK(s.durable_latency.sum < 0.3 * static_cast<double>(s.entries) + 1e-9);
}

namespace {

// 300 commits as an engine's batch puts them: keys sharing a long prefix,
// buffers one after another on two segments.
std::vector<masterd::HaRecord> EngineBatch() {
  std::vector<masterd::HaRecord> records;
  for (int i = 0; i < 300; ++i) {
    masterd::HaRecord rec{.kind = masterd::HaRecord::Kind::kCommit};
    rec.object = {.key = "Qwen3-8B@tp1@rank0@chunk-" + std::to_string(7000000 + 17 * i),
                  .size_bytes = 4096,
                  .complete = true,
                  .replicas = {{{i % 3 ? "127.0.0.1:40123" : "127.0.0.1:40124",
                                 4096ull * (1000 + i), 4096}}}};
    records.push_back(std::move(rec));
  }
  return records;
}

// `plain`'s bytes under the compressed entry's header, deflated by zlib
// here (not CompressHaEntry), its stated size `stated`.
std::string Marked(std::string_view plain, uint32_t stated) {
  std::string out;
  ByteWriter w(&out);
  w.U32(masterd::kCompressedHaEntryMark);
  w.U32(stated);
  uLongf len = compressBound(plain.size());
  std::string body(len, '\0');
  REQUIRE(compress2(reinterpret_cast<Bytef*>(body.data()), &len,
                    reinterpret_cast<const Bytef*>(plain.data()), plain.size(), 6) == Z_OK);
  body.resize(len);
  return out + body;
}

bool Refused(std::string_view bytes, std::string_view says) {
  auto r = masterd::DecodeHaEntry(bytes);
  return !r.ok() && r.status().code() == ErrorCode::PROTOCOL_ERROR &&
         r.status().message().find(says) != std::string::npos;
}

}  // namespace

TEST_CASE("a compressed entry reads back as the plain one; a damaged or oversized one is refused") {
  const std::vector<masterd::HaRecord> records = EngineBatch();
  const std::string plain = masterd::EncodeHaEntry(records);
  const std::string packed = masterd::CompressHaEntry(plain);
  REQUIRE_FALSE(packed.empty());
  CHECK(masterd::IsCompressedHaEntry(packed));
  CHECK_FALSE(masterd::IsCompressedHaEntry(plain));
  MESSAGE("300 commits: " << plain.size() << " bytes plain, " << packed.size() << " deflated");
  CHECK(packed.size() * 2 < plain.size());
  auto back = masterd::DecodeHaEntry(packed);
  REQUIRE(back.ok());
  CHECK(masterd::EncodeHaEntry(*back) == plain);

  // Not worth it: a one-record entry is shipped plain.
  CHECK(masterd::CompressHaEntry(masterd::EncodeHaEntry({records[0]})).empty());

  // Cut anywhere, one bit flipped in the body, or a stated size that is
  // not the inflated one: refused, never misread.
  for (size_t cut = 0; cut < packed.size(); cut += 7) {
    CHECK_FALSE(masterd::DecodeHaEntry(packed.substr(0, cut)).ok());
  }
  for (size_t at = 8; at < packed.size(); at += packed.size() / 16) {
    std::string flipped = packed;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x10);
    CHECK_FALSE(masterd::DecodeHaEntry(flipped).ok());
  }
  CHECK(Refused(Marked(plain, plain.size() + 1), "inflates to"));
  CHECK(Refused(Marked(plain, plain.size() - 1), "truncated or inflates past"));
  CHECK(Refused(Marked(plain, plain.size()).substr(0, 6), "header is cut short"));
  CHECK(Refused(packed.substr(0, 8) + "not zlib at all", "not a zlib stream"));
  // A size claim over an entry's limit allocates nothing: 1 GiB of zeros
  // would deflate to about 1 MiB.
  CHECK(Refused(Marked(std::string(1000, '\0'), ha::kMaxLogEntryBytes + 1), "over the limit"));
  CHECK(Refused(Marked(packed, packed.size()), "compressed twice"));
  // A reader that knows no compression (before this build) reads the mark
  // as a record count over any entry's limit.
  ByteReader old(packed);
  CHECK(old.U32("entry.records") > (1u << 24));
}

TEST_CASE("the leader ships deflated entries (or plain, switched off) and a standby follows both") {
  for (const bool compress : {true, false}) {
    CAPTURE(compress);
    // One entry in flight and etcd down while the puts queue: they go in
    // one large entry once it is back.
    Group g(masterd::HaLogOptions{.entries_in_flight = 1, .compress = compress});
    Mount(*g.state, 0);
    REQUIRE(g.log.WaitDurableFor(kWaitUs));
    g.etcd.SetDown(true);
    for (int i = 0; i < 200; ++i) {
      const std::string key = "Qwen3-8B@tp1@rank0@chunk-" + std::to_string(5000 + i);
      REQUIRE(g.state->PutStart({Client(1), key, 4096, {1, false}}, kNow).ok());
      REQUIRE(g.state->PutEnd({Client(1), key}, kNow).ok());
    }
    g.etcd.SetDown(false);
    REQUIRE(g.log.WaitDurableFor(kWaitUs));
    const masterd::HaLog::Stats s = g.log.stats();
    ha::FencedLog reader(g.etcd, Keys());
    auto entries = reader.ReadAfter(0);
    REQUIRE(entries.ok());
    size_t compressed = 0, largest = 0;
    uint64_t bytes = 0;
    for (const auto& e : *entries) {
      compressed += masterd::IsCompressedHaEntry(e.data);
      largest = std::max(largest, e.data.size());
      bytes += e.data.size();
    }
    CHECK(bytes == s.shipped_bytes);
    if (compress) {
      CHECK(compressed >= 1);
      CHECK(s.shipped_bytes * 2 < s.plain_bytes);
    } else {
      CHECK(compressed == 0);
      CHECK(s.shipped_bytes == s.plain_bytes);
      CHECK(largest > 4000);  // the queued puts did go in one entry
    }
    CHECK(g.StandbyFingerprint() == Fingerprint(*g.state));
    CHECK(g.Follow().objects() == 200);
  }
}

TEST_CASE("a loaded leader lingers before it cuts an entry; a light load never waits") {
  Group g(masterd::HaLogOptions{.entries_in_flight = 1, .linger_us = 50000});
  int next = 0;
  auto put = [&](int n) {
    for (int i = 0; i < n; ++i, ++next) {
      const std::string key = "k" + std::to_string(next);
      REQUIRE(g.state->PutStart({Client(1), key, 4096, {1, false}}, kNow).ok());
      REQUIRE(g.state->PutEnd({Client(1), key}, kNow).ok());
    }
    return g.log.stats().appended;
  };
  // Etcd down while 200 puts queue: the first few go in one entry, the
  // rest (at least 32 in either) in the next once etcd is back and the
  // clock passed the linger: the leader now counts as loaded.
  auto load = [&] {
    g.etcd.SetDown(true);
    put(200);
    g.etcd.SetDown(false);
    g.clock.AdvanceMs(50);
    REQUIRE(g.log.WaitDurableFor(kWaitUs));
  };
  Mount(*g.state, 0);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  // Light load: an entry of a record or two goes at once (the clock never
  // moves by itself here, so a linger would never end).
  put(1);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  load();
  const uint64_t entries = g.log.stats().entries;
  // Give the sequencer time to apply what committed and go idle, so that
  // the next record has to wake it to start the linger (not a timing
  // assertion: had it not gone idle, the test only checks less).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // The next change waits out the linger on the leader's clock: nothing is
  // cut while the clock stands still.
  const uint64_t ticket = put(1);
  CHECK_FALSE(g.log.WaitDurableFor(200000));
  CHECK(g.log.Released() < ticket);
  CHECK(g.log.stats().entries == entries);
  g.clock.AdvanceMs(49);
  CHECK_FALSE(g.log.WaitDurableFor(100000));
  g.clock.AdvanceMs(1);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  CHECK(g.log.stats().entries == entries + 1);
  // That entry held one record: the load is light again, no wait.
  put(1);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  CHECK(g.log.stats().entries == entries + 2);
  // Loaded again: a queue of kHaLingerMaxRecords is cut at once however
  // little it waited.
  load();
  put(static_cast<int>(masterd::kHaLingerMaxRecords));
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  CHECK(g.StandbyFingerprint() == Fingerprint(*g.state));
}

TEST_CASE("a histogram is exported cumulative, with its sum and count, as Prometheus reads it") {
  masterd::SecondsHistogram h;
  for (double v : {0.0005, 0.001, 0.003, 0.004, 0.3, 7.0}) h.Add(v);
  CHECK(h.count() == 6);
  CHECK(h.buckets[0] == 2);  // le 0.001 takes its bound
  CHECK(h.buckets[2] == 2);  // (0.002, 0.005]
  CHECK(h.buckets[8] == 1);  // (0.2, 0.5]
  CHECK(h.buckets.back() == 1);  // above 5 s
  masterd::PrometheusText p;
  p.Histogram("x_latency_seconds", "help", h, {{"role", "leader"}});
  const std::string& t = p.str();
  CHECK(t.find("# TYPE x_latency_seconds histogram\n") != std::string::npos);
  CHECK(t.find("x_latency_seconds_bucket{role=\"leader\",le=\"0.001\"} 2\n") != std::string::npos);
  CHECK(t.find("x_latency_seconds_bucket{role=\"leader\",le=\"0.005\"} 4\n") != std::string::npos);
  CHECK(t.find("x_latency_seconds_bucket{role=\"leader\",le=\"5\"} 5\n") != std::string::npos);
  CHECK(t.find("x_latency_seconds_bucket{role=\"leader\",le=\"+Inf\"} 6\n") != std::string::npos);
  CHECK(t.find("x_latency_seconds_count{role=\"leader\"} 6\n") != std::string::npos);
  CHECK(t.find("x_latency_seconds_sum{role=\"leader\"} 7.3085") != std::string::npos);
}

TEST_CASE("objects left on a segment the log already unmounted are left out of a takeover") {
  masterd::HaImage image;
  masterd::HaRecord mount{.kind = masterd::HaRecord::Kind::kMount};
  mount.segment.desc = Segment("s1", 64 * kMiB);
  REQUIRE(image.Apply(mount).ok());
  masterd::HaRecord commit{.kind = masterd::HaRecord::Kind::kCommit};
  commit.object = {.key = "k", .size_bytes = 10, .complete = true, .replicas = {{{"s1", 0, 10}}}};
  REQUIRE(image.Apply(commit).ok());
  REQUIRE(image.Apply({.kind = masterd::HaRecord::Kind::kUnmount, .name = "s1"}).ok());
  auto state = NewState(nullptr);
  auto dropped = image.LoadInto(*state, kNow);
  REQUIRE(dropped.ok());
  CHECK(*dropped == 1);
  CHECK(state->DumpObjects(true).empty());
}

TEST_CASE("a round of PutStarts waits for its own changes and frees, not an earlier round's commit") {
  Group g;
  Mount(*g.state, 0);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  g.etcd.SetDown(true);  // nothing more becomes durable
  const uint64_t durable = g.log.Released();
  // A round on this thread commits an object (another connection's PutEnd).
  REQUIRE(g.state->PutStart({Client(1), "a", 4096, {1, false}}, kNow).ok());
  REQUIRE(g.state->PutEnd({Client(1), "a"}, kNow).ok());
  CHECK(g.log.Ticket(1) == g.log.stats().appended);  // it reveals the commit: waits for it
  // The next round of only PutStarts on this thread changed nothing.
  REQUIRE(g.state->PutStart({Client(1), "b", 4096, {1, false}}, kNow).ok());
  CHECK(g.log.Ticket(0) <= durable);
  // A round that queued a change of its own (a mount here) waits for it.
  Mount(*g.state, 1);
  CHECK(g.log.Ticket(0) == g.log.stats().appended);
  g.etcd.SetDown(false);
}

TEST_CASE("a leader past its lease deadline releases no round, not even a read") {
  Group g;
  Mount(*g.state, 0);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  g.log.SetLeaseDeadline(g.clock.NowUs() + 1000000);
  const uint64_t before = g.log.Ticket(0);
  CHECK(before <= g.log.Released());  // a round that revealed nothing goes out at once
  CHECK_FALSE(g.log.Failed());
  g.clock.AdvanceUs(1000000);
  const uint64_t after = g.log.Ticket(0);
  CHECK(after > g.log.Released());
  CHECK(g.log.Failed());
}
