#include "metadata/kv_store.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "common/test_seed.h"
#include "metadata/sqlite_durability.h"

using mc::ErrorCode;
using mc::metadata::KvLimits;
using mc::metadata::KvStore;

namespace {

std::unique_ptr<KvStore> MemoryStore(KvLimits limits = {}) {
  auto s = KvStore::Open(mc::metadata::NewMemoryOnly(), limits);
  REQUIRE(s.ok());
  return std::move(s).value();
}

// A fresh directory under TMPDIR, removed when the test ends.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mc_meta_XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

std::unique_ptr<KvStore> SqliteStore(const std::string& file, KvLimits limits = {}) {
  auto d = mc::metadata::OpenSqliteDurability(file);
  REQUIRE_MESSAGE(d.ok(), d.status().ToString());
  auto s = KvStore::Open(std::move(d).value(), limits);
  REQUIRE(s.ok());
  return std::move(s).value();
}

}  // namespace

TEST_CASE("a stored value reads back and a deleted one is gone") {
  auto s = MemoryStore();
  CHECK(s->Get("a").code() == ErrorCode::OBJECT_NOT_FOUND);
  CHECK(s->Put("a", "1").ok());
  CHECK(s->Get("a").value() == "1");
  CHECK(s->Put("a", "2").ok());
  CHECK(s->Get("a").value() == "2");
  CHECK(s->Delete("a").ok());
  CHECK(s->Get("a").code() == ErrorCode::OBJECT_NOT_FOUND);
  CHECK(s->Delete("a").code() == ErrorCode::OBJECT_NOT_FOUND);
}

TEST_CASE("values are raw bytes, empty ones included") {
  auto s = MemoryStore();
  std::string bin("\0\xff\n\r x", 6);
  CHECK(s->Put("bin", bin).ok());
  CHECK(s->Get("bin").value() == bin);
  CHECK(s->Put("empty", "").ok());
  CHECK(s->Get("empty").value().empty());
}

TEST_CASE("an rpc_meta key cannot change but can be rewritten with the same bytes") {
  auto s = MemoryStore();
  const std::string key = "mooncake/rpc_meta/host1";
  CHECK(s->Put(key, "{\"rpc_port\":1}").ok());
  CHECK(s->Put(key, "{\"rpc_port\":1}").ok());
  mc::Status st = s->Put(key, "{\"rpc_port\":2}");
  CHECK(st.code() == ErrorCode::OBJECT_ALREADY_EXISTS);
  CHECK(st.message().find("rpc_meta") != std::string::npos);
  CHECK(s->Get(key).value() == "{\"rpc_port\":1}");
  // Deleting it frees the name for a new value.
  CHECK(s->Delete(key).ok());
  CHECK(s->Put(key, "{\"rpc_port\":2}").ok());
  // Other keys change freely.
  CHECK(s->Put("mooncake/ram/seg", "a").ok());
  CHECK(s->Put("mooncake/ram/seg", "b").ok());
}

TEST_CASE("keys and values past their limits are refused naming the limit") {
  auto s = MemoryStore(KvLimits{8, 16});
  CHECK(s->Put("12345678", std::string(16, 'v')).ok());
  mc::Status key = s->Put("123456789", "v");
  CHECK(key.code() == ErrorCode::BUFFER_OVERFLOW);
  CHECK(key.message().find("max_key_size = 8 bytes") != std::string::npos);
  mc::Status value = s->Put("k", std::string(17, 'v'));
  CHECK(value.code() == ErrorCode::BUFFER_OVERFLOW);
  CHECK(value.message().find("max_value_size = 16 bytes") != std::string::npos);
  CHECK(s->Get("123456789").code() == ErrorCode::BUFFER_OVERFLOW);
  CHECK(s->Put("", "v").code() == ErrorCode::INVALID_KEY);
  CHECK(s->size() == 1);
}

TEST_CASE("listing returns exactly the keys under a prefix in byte order") {
  auto s = MemoryStore();
  for (const char* k : {"mooncake/ram/b", "mooncake/ram/a", "mooncake/rpc_meta/x", "other", "mooncake/ra"})
    CHECK(s->Put(k, "v").ok());
  CHECK(s->List("mooncake/ram/") == std::vector<std::string>{"mooncake/ram/a", "mooncake/ram/b"});
  CHECK(s->List("nothing").empty());
  CHECK(s->List("").size() == 5);
}

TEST_CASE("random operations agree with a std::map model") {
  const uint64_t seed = mc::TestSeed("kv_store model test");
  std::mt19937_64 rng(seed);
  auto s = MemoryStore();
  std::map<std::string, std::string> model;
  for (int i = 0; i < 5000; i++) {
    std::string key = (rng() % 4 == 0 ? "rpc_meta/" : "k/") + std::to_string(rng() % 50);
    std::string value = std::to_string(rng() % 3);
    switch (rng() % 3) {
      case 0: {
        auto it = model.find(key);
        bool refused = it != model.end() && it->second != value && key.find("rpc_meta") != std::string::npos;
        CHECK(s->Put(key, value).ok() == !refused);
        if (!refused) model[key] = value;
        break;
      }
      case 1: CHECK(s->Delete(key).ok() == (model.erase(key) == 1)); break;
      default: {
        auto got = s->Get(key);
        auto it = model.find(key);
        CHECK(got.ok() == (it != model.end()));
        if (got.ok() && it != model.end()) CHECK(*got == it->second);
      }
    }
  }
  CHECK(s->size() == model.size());
}

TEST_CASE("a SQLite store keeps puts and deletes across reopening") {
  TempDir dir;
  const std::string file = (dir.path / "meta.db").string();
  std::string bin("\0\x01\xfe", 3);
  {
    auto s = SqliteStore(file);
    CHECK(s->Put("a", "1").ok());
    CHECK(s->Put("b", "2").ok());
    CHECK(s->Put("b", "3").ok());
    CHECK(s->Put("gone", "x").ok());
    CHECK(s->Delete("gone").ok());
    CHECK(s->Put("mooncake/rpc_meta/h", "p1").ok());
    CHECK(s->Put(std::string("k\0z", 3), bin).ok());
    CHECK(s->Put("empty", "").ok());
  }
  auto s = SqliteStore(file);
  CHECK(s->size() == 5);
  CHECK(s->Get("a").value() == "1");
  CHECK(s->Get("b").value() == "3");
  CHECK(s->Get("gone").code() == ErrorCode::OBJECT_NOT_FOUND);
  CHECK(s->Get(std::string("k\0z", 3)).value() == bin);
  CHECK(s->Get("empty").value().empty());
  // The write-once rule holds against the reloaded value.
  CHECK(s->Put("mooncake/rpc_meta/h", "p2").code() == ErrorCode::OBJECT_ALREADY_EXISTS);
}

TEST_CASE("a SQLite file in use by one store is refused to a second") {
  TempDir dir;
  const std::string file = (dir.path / "meta.db").string();
  auto first = SqliteStore(file);
  CHECK(first->Put("a", "1").ok());
  auto second = mc::metadata::OpenSqliteDurability(file);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().message().find("in use") != std::string::npos);
}

TEST_CASE("an unopenable SQLite path is reported with the path") {
  auto d = mc::metadata::OpenSqliteDurability("/nonexistent-dir/x/meta.db");
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().message().find("/nonexistent-dir/x/meta.db") != std::string::npos);
}
