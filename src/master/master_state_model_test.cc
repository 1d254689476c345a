// Randomized test of MasterState against a simple reference model. The model
// knows the rules (existence, status, leases, pins, liveness, timeouts) but
// not placement: it learns where replicas went from PutStart's reply and
// checks that placement and eviction obeyed the rules.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "common/test_seed.h"
#include "master/master_state.h"
#include "master/master_test_util.h"

using namespace mc;
using namespace mc::master;
using namespace mc::master::testing;

namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kSecond = 1000000;

struct ModelObject {
  uint64_t size = 0;
  bool complete = false;
  bool pin_requested = false;
  bool pin_counted = false;
  uint64_t pin_until = 0;
  uint64_t lease_until = 0;
  uint64_t deadline = 0;
  std::vector<std::set<std::string>> replicas;  // segment names per replica
};

struct ModelSegment {
  uint64_t owner = 0;
  uint64_t size = 0;
};

struct Model {
  Options cfg;
  std::map<std::string, ModelObject> objects;
  std::map<std::string, ModelSegment> segments;
  std::map<uint64_t, uint64_t> clients;  // id -> last ping
  std::set<uint64_t> remount_pending;     // registered by a ping, not mounted since

  bool Alive(const std::string& seg, uint64_t now) const {
    auto c = clients.find(segments.at(seg).owner);
    return c != clients.end() && c->second + cfg.client_ttl_us >= now;
  }
  bool Evictable(const ModelObject& o, uint64_t now, bool allow_pinned) const {
    return o.complete && o.lease_until <= now &&
           (allow_pinned || !(o.pin_counted && o.pin_until > now));
  }
  void Drop(const std::set<std::string>& gone) {
    for (auto it = objects.begin(); it != objects.end();) {
      auto& reps = it->second.replicas;
      std::erase_if(reps, [&](const std::set<std::string>& r) {
        for (auto& s : r)
          if (gone.count(s)) return true;
        return false;
      });
      it = reps.empty() ? objects.erase(it) : std::next(it);
    }
    for (auto& s : gone) segments.erase(s);
  }
  void Touch(ModelObject& o, uint64_t now) {
    o.lease_until = std::max(o.lease_until, now + cfg.default_kv_lease_ttl_us);
    if (o.pin_counted) o.pin_until = std::max(o.pin_until, now + cfg.default_kv_soft_pin_ttl_us);
  }
};

struct Runner {
  std::mt19937_64 rng;
  Harness h;
  Model m;
  size_t evicted_seen = 0;

  Runner(uint64_t seed, Options cfg) : rng(seed), h(cfg) { m.cfg = cfg; h.live.clear(); }

  uint64_t Pick(uint64_t n) { return rng() % n; }
  std::string Key() { return "k" + std::to_string(Pick(48)); }

  // Applies the evictions the state machine reported since the last call and
  // checks each was allowed, pinned ones only after every unpinned candidate.
  void TakeEvictions(uint64_t now) {
    auto& ev = h.listener.evicted;
    std::set<std::string> batch(ev.begin() + static_cast<long>(evicted_seen), ev.end());
    evicted_seen = ev.size();
    bool pinned_taken = false;
    for (auto& k : batch) {
      REQUIRE(m.objects.count(k));
      REQUIRE(m.Evictable(m.objects[k], now, true));
      pinned_taken |= !m.Evictable(m.objects[k], now, false);
    }
    if (pinned_taken)
      for (auto& [k, o] : m.objects) CHECK((batch.count(k) || !m.Evictable(o, now, false)));
    for (auto& k : batch) m.objects.erase(k);
  }

  void CheckNoHandle(uint64_t size, uint32_t replicas, uint64_t now) {
    std::vector<uint64_t> alive;
    for (auto& [name, s] : m.segments)
      if (m.Alive(name, now)) alive.push_back(s.size);
    bool any_evictable = false;
    for (auto& [k, o] : m.objects) any_evictable |= m.Evictable(o, now, true);
    uint64_t total = 0;
    for (auto s : alive) total += s;
    const bool impossible = alive.size() < replicas || total < size * replicas;
    // A leftover evictable object is fine only if its space cannot help.
    if (any_evictable && !impossible) {
      for (auto& [k, o] : m.objects) CHECK_FALSE(m.Evictable(o, now, true));
    }
  }

  void PutStart(uint64_t now) {
    const std::string key = Key();
    const uint64_t size = Pick(8) == 0 ? 0 : 1 + Pick(Pick(4) == 0 ? 300 * kKiB : 40 * kKiB);
    const uint32_t replicas = static_cast<uint32_t>(Pick(10) == 0 ? 0 : 1 + Pick(3));
    const bool pin = Pick(4) == 0;
    auto r = h.state->PutStart({Client(1), key, size, {replicas, pin}}, now);
    TakeEvictions(now);
    if (size == 0 || replicas == 0) {
      REQUIRE(r.code() == ErrorCode::INVALID_PARAMS);
      return;
    }
    if (m.objects.count(key)) {
      REQUIRE(r.code() == ErrorCode::OBJECT_ALREADY_EXISTS);
      return;
    }
    if (!r.ok()) {
      REQUIRE(r.code() == ErrorCode::NO_AVAILABLE_HANDLE);
      CheckNoHandle(size, replicas, now);
      return;
    }
    ModelObject o{size, false, pin, false, 0, 0, now + m.cfg.put_timeout_us, {}};
    std::set<std::string> used;
    REQUIRE(r->replicas.size() == replicas);
    for (auto& rep : r->replicas) {
      uint64_t total = 0;
      for (auto& b : rep.buffers) {
        REQUIRE(m.Alive(b.segment_name, now));
        REQUIRE(b.size_bytes <= m.cfg.stripe_size_bytes);
        total += b.size_bytes;
      }
      REQUIRE(total == size);
      auto segs = SegmentsOf(rep);
      for (auto& s : segs) REQUIRE(used.insert(s).second);
      o.replicas.push_back(segs);
    }
    m.objects[key] = o;
  }

  void Step(uint64_t now) {
    const int op = static_cast<int>(Pick(100));
    const std::string key = Key();
    auto it = m.objects.find(key);
    const bool found = it != m.objects.end();
    if (op < 30) {
      PutStart(now);
    } else if (op < 45) {
      Status s = h.state->PutEnd({Client(1), key}, now);
      REQUIRE(s.code() == (found ? ErrorCode::OK : ErrorCode::OBJECT_NOT_FOUND));
      if (found && !it->second.complete) {
        it->second.complete = true;
        it->second.pin_counted = it->second.pin_requested;
        it->second.pin_until = now + m.cfg.default_kv_soft_pin_ttl_us;
      }
    } else if (op < 50) {
      Status s = h.state->PutRevoke({Client(1), key}, now);
      REQUIRE(s.code() == (!found ? ErrorCode::OBJECT_NOT_FOUND
                           : it->second.complete ? ErrorCode::INVALID_WRITE : ErrorCode::OK));
      if (s.ok()) m.objects.erase(it);
    } else if (op < 65) {
      auto r = h.state->GetReplicaList({Client(1), key}, now);
      REQUIRE(r.code() == (!found ? ErrorCode::OBJECT_NOT_FOUND
                           : !it->second.complete ? ErrorCode::REPLICA_IS_NOT_READY
                                                  : ErrorCode::OK));
      if (r.ok()) {
        REQUIRE(r->replicas.size() == it->second.replicas.size());
        for (size_t i = 0; i < r->replicas.size(); ++i)
          REQUIRE(SegmentsOf(r->replicas[i]) == it->second.replicas[i]);
        m.Touch(it->second, now);
      }
    } else if (op < 70) {
      const bool exists = h.state->ExistKey({Client(1), key}, now).value();
      REQUIRE(exists == (found && it->second.complete));
      if (exists) m.Touch(it->second, now);
    } else if (op < 78) {
      const bool force = Pick(4) == 0;
      Status s = h.state->Remove({key, force}, now);
      ErrorCode want = !found ? ErrorCode::OBJECT_NOT_FOUND
                       : !it->second.complete ? ErrorCode::REPLICA_IS_NOT_READY
                       : (it->second.lease_until > now && !force) ? ErrorCode::OBJECT_HAS_LEASE
                                                                   : ErrorCode::OK;
      REQUIRE(s.code() == want);
      if (s.ok()) m.objects.erase(it);
    } else if (op < 80) {
      ListAll(now);
    } else if (op < 82) {
      uint64_t want = 0;
      for (auto i = m.objects.begin(); i != m.objects.end();) {
        const bool go = i->second.complete && i->second.lease_until <= now;
        want += go;
        i = go ? m.objects.erase(i) : std::next(i);
      }
      REQUIRE(h.state->RemoveAll(now).removed == want);
    } else if (op < 86) {
      MountOrUnmount(now);
    } else {
      const uint64_t c = 1 + Pick(3);
      if (!m.clients.count(c)) m.remount_pending.insert(c);
      REQUIRE(h.state->Ping({Client(c)}, now).remount == (m.remount_pending.count(c) > 0));
      m.clients[c] = now;
    }
  }

  void ListAll(uint64_t now) {
    const uint32_t page = static_cast<uint32_t>(1 + Pick(7));
    std::vector<std::string> got;
    std::string cursor;
    do {
      auto r = h.state->ListKeys({"k", page, cursor}, now);
      REQUIRE(r.ok());
      REQUIRE(r->keys.size() <= page);
      for (auto& k : r->keys) got.push_back(k.key);
      cursor = r->next_cursor;
    } while (!cursor.empty());
    std::vector<std::string> want;
    for (auto& [k, o] : m.objects)
      if (o.complete) want.push_back(k);
    REQUIRE(got == want);
  }

  void MountOrUnmount(uint64_t now) {
    const std::string name = "seg" + std::to_string(Pick(5));
    const uint64_t client = 1 + Pick(3);
    const uint64_t size = (256 + 256 * (Pick(3))) * kKiB;
    auto seg = m.segments.find(name);
    if (Pick(3) != 0) {
      Status s = h.state->MountSegment({Client(client), Segment(name, size)}, now);
      const bool same = seg != m.segments.end() && seg->second.owner == client &&
                        seg->second.size == size;
      REQUIRE(s.code() == (seg == m.segments.end() || same ? ErrorCode::OK
                                                           : ErrorCode::SEGMENT_ALREADY_EXISTS));
      if (s.ok()) {
        m.segments[name] = {client, size};
        m.clients[client] = now;
        m.remount_pending.erase(client);
      }
    } else {
      Status s = h.state->UnmountSegment({Client(client), name}, now);
      REQUIRE(s.code() == (seg == m.segments.end()          ? ErrorCode::SEGMENT_NOT_FOUND
                           : seg->second.owner != client ? ErrorCode::ILLEGAL_CLIENT
                                                         : ErrorCode::OK));
      if (s.ok()) m.Drop({name});
    }
  }

  void Tick(uint64_t now) {
    std::set<std::string> gone;
    for (auto c = m.clients.begin(); c != m.clients.end();) {
      if (c->second + m.cfg.client_ttl_us >= now) {
        ++c;
        continue;
      }
      for (auto& [name, s] : m.segments)
        if (s.owner == c->first) gone.insert(name);
      m.remount_pending.erase(c->first);
      c = m.clients.erase(c);
    }
    m.Drop(gone);
    std::erase_if(m.objects, [&](auto& kv) { return !kv.second.complete && kv.second.deadline <= now; });
    for (auto& [k, o] : m.objects)
      if (o.pin_counted && o.pin_until <= now) o.pin_counted = false;
    (void)h.state->Tick(now);
    TakeEvictions(now);
  }

  void CheckInvariants(uint64_t now) {
    const Status internal = h.state->CheckInvariants();
    REQUIRE_MESSAGE(internal.ok(), internal.message());
    auto dump = h.state->DumpObjects(false);
    REQUIRE(dump.size() == m.objects.size());
    std::map<std::string, std::map<uint64_t, uint64_t>> ranges;  // segment -> offset -> end
    uint64_t allocated = 0;
    for (auto& d : dump) {
      auto& o = m.objects.at(d.key);
      REQUIRE(d.complete == o.complete);
      REQUIRE(d.replicas.size() == o.replicas.size());
      for (size_t r = 0; r < d.replicas.size(); ++r) {
        std::set<std::string> segs;
        for (auto& b : d.replicas[r]) {
          segs.insert(b.segment_name);
          const uint64_t end = b.offset + SegmentAllocator::AlignUp(b.size_bytes);
          REQUIRE(ranges[b.segment_name].emplace(b.offset, end).second);
          allocated += end - b.offset;
        }
        REQUIRE(segs == o.replicas[r]);
      }
    }
    for (auto& [seg, rs] : ranges) {
      REQUIRE(m.segments.count(seg));
      uint64_t prev_end = 0;
      for (auto& [off, end] : rs) {
        REQUIRE(off >= prev_end);  // no two buffers overlap
        prev_end = end;
      }
      REQUIRE(prev_end <= m.segments[seg].size);
    }
    auto c = h.state->counters();
    // Space of leased objects removed by force stays allocated (retired)
    // until their leases end: no read grant of theirs covers a newer object.
    REQUIRE(c.allocated_bytes == allocated + h.state->retired_bytes());
    REQUIRE(c.segment_count == m.segments.size());
    REQUIRE(c.active_clients == m.clients.size());
    uint64_t pinned = 0;
    for (auto& [k, o] : m.objects) pinned += o.pin_counted;
    REQUIRE(c.soft_pinned_count == pinned);
    (void)now;
  }
};

}  // namespace

TEST_CASE("randomized operations agree with a reference model of the master") {
  const uint64_t seed = mc::TestSeed("master model test");
  Options cfg;
  cfg.stripe_size_bytes = 64 * kKiB;
  cfg.default_kv_soft_pin_ttl_us = 60 * kSecond;
  MasterCounters total;
  for (uint64_t run = 0; run < 20; ++run) {
    CAPTURE(seed);
    CAPTURE(run);
    Runner t(seed * 1000 + run, cfg);
    uint64_t now = t.h.now_us;
    for (int step = 0; step < 1500; ++step) {
      CAPTURE(step);
      const uint64_t dice = t.Pick(100);
      if (dice < 10) {
        now += t.Pick(100) == 0 ? 31 * kSecond : t.Pick(3 * kSecond);
        t.Tick(now);
      } else {
        t.Step(now);
      }
      t.CheckInvariants(now);
    }
    auto c = t.h.state->counters();
    total.put_end.requests += c.put_end.requests - c.put_end.failures;
    total.evicted_keys += c.evicted_keys;
    total.expired_clients += c.expired_clients;
    total.discarded_puts += c.discarded_puts;
    total.put_start.failures += c.put_start.failures;
  }
  // The runs must have reached the interesting states.
  std::printf("model runs: %llu puts ended, %llu evicted, %llu clients expired, "
              "%llu puts discarded, %llu PutStart failures\n",
              (unsigned long long)total.put_end.requests, (unsigned long long)total.evicted_keys,
              (unsigned long long)total.expired_clients, (unsigned long long)total.discarded_puts,
              (unsigned long long)total.put_start.failures);
  CHECK(total.evicted_keys > 0);
  CHECK(total.expired_clients > 0);
  CHECK(total.discarded_puts > 0);
}
