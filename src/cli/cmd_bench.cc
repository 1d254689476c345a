// `mooncake bench`: throughput and latency of the cluster (or the master
// alone, a blackhole, a trace replay), optionally side by side with Redis.
// The engine lives in src/bench; this file reads the flags, checks them,
// prints the setup and hands over.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "bench/live_trace.h"
#include "bench/report.h"
#include "bench/resp.h"
#include "bench/workload.h"
#include "cli/client_common.h"
#include "cli/command.h"
#include "common/units.h"
#include "config/command_config.h"

namespace mc::cli {

namespace {

using namespace mc::bench;

constexpr unsigned kSections = config::kCluster | config::kClient | config::kLog | config::kTls;
// Share of the pool the read key set may fill: below the eviction high
// watermark (0.90) with room for the objects of runs still being evicted.
constexpr double kKeySetPoolShare = 0.7;
// Connect and I/O timeout of the Redis comparison.
constexpr uint64_t kRedisTimeoutUs = 10000000;

struct BenchArgs {
  std::string op = "put,get";
  std::string value_size = "4mb";
  uint32_t threads = 1;
  uint32_t batch = 1;
  std::string duration = "10s";
  uint64_t ops = 0;
  uint64_t keys = 1000;
  std::string distribution = "uniform";
  std::string key_names = "counter";
  uint32_t key_bytes = 0;
  bool metadata_only = false;
  bool blackhole = false;
  std::string json;
  std::string trace;
  std::string block_size = "64kb";
  double speedup = 0;
  std::string compare;
  std::unique_ptr<config::CommandConfig> cc;
};

// Everything the run needs, resolved and checked.
struct Plan {
  std::vector<Op> ops;
  WorkloadOptions workload;
  uint64_t block_size = 0;
  std::string redis;  // host:port, empty: no comparison
  std::string prefix;  // of every key this run writes
  bool hashed_names = false;
  uint32_t key_bytes = 0;  // 0: names as long as they come
  std::string mode;    // cluster, metadata-only, blackhole
};

// The master's default max_key_bytes; a longer key is refused there anyway.
constexpr uint32_t kMaxBenchKeyBytes = 4096;

Status Usage(const std::string& why) { return Error(ErrorCode::INVALID_PARAMS, why); }

Result<Plan> MakePlan(const BenchArgs& a, CLI::App& sub) {
  Plan p;
  MC_ASSIGN_OR_RETURN(p.ops, ParseOps(a.op));
  auto vs = ParseSize(a.value_size);
  if (!vs.ok() || *vs == 0) return Usage("--value-size: " + (vs.ok() ? std::string("must be positive") : vs.status().message()));
  p.workload.value_size = *vs;
  if (a.threads == 0 || a.threads > kMaxThreads) return Usage("--threads: 1.." + std::to_string(kMaxThreads));
  if (a.batch == 0 || a.batch > kMaxBatch) return Usage("--batch: 1.." + std::to_string(kMaxBatch));
  if (a.keys == 0 || a.keys > kMaxKeys) return Usage("--keys: 1.." + std::to_string(kMaxKeys));
  if (sub.count("--duration") && sub.count("--ops")) return Usage("--duration and --ops exclude each other");
  auto d = ParseDurationUs(a.duration, DurationUnit::kSeconds);
  if (!d.ok() || *d == 0) return Usage("--duration: " + (d.ok() ? std::string("must be positive") : d.status().message()));
  p.workload.threads = a.threads;
  p.workload.batch = a.batch;
  p.workload.duration_us = *d;
  p.workload.ops = a.ops;
  p.workload.keys = a.keys;
  p.workload.zipf = a.distribution == "zipf";
  p.hashed_names = a.key_names == "hashed";
  if (a.key_bytes > kMaxBenchKeyBytes)
    return Usage("--key-bytes: at most " + std::to_string(kMaxBenchKeyBytes));
  p.key_bytes = a.key_bytes;
  p.workload.progress = true;
  if (a.metadata_only && a.blackhole) return Usage("--metadata-only and --blackhole exclude each other");
  p.mode = a.metadata_only ? "metadata-only" : a.blackhole ? "blackhole" : "cluster";
  if (!a.compare.empty()) {
    if (!a.trace.empty()) return Usage("--compare does not apply to --trace replays");
    MC_ASSIGN_OR_RETURN(p.redis, ParseRedisUrl(a.compare));
  }
  auto bs = ParseSize(a.block_size);
  if (!bs.ok() || *bs == 0) return Usage("--block-size: " + (bs.ok() ? std::string("must be positive") : bs.status().message()));
  p.block_size = *bs;
  if (a.speedup < 0) return Usage("--speedup: must not be negative");
  std::random_device rd;
  char tag[16];
  std::snprintf(tag, sizeof tag, "%08x", rd());
  p.prefix = std::string("bench-") + tag + "-";
  return p;
}

void AddOptions(CLI::App& sub, BenchArgs& a) {
  sub.add_option("--op", a.op, "Operations, comma separated, run in order over the same keys: put, get, mixed, exists")->type_name("LIST")->capture_default_str();
  sub.add_option("--value-size", a.value_size, "Bytes of each value (4kb, 4mb)")->type_name("SIZE")->capture_default_str();
  sub.add_option("--threads", a.threads, "Worker threads, each with its own connection")->type_name("N")->capture_default_str();
  sub.add_option("--batch", a.batch, "Keys per call (batch operations when above 1)")->type_name("N")->capture_default_str();
  sub.add_option("--duration", a.duration, "How long each operation runs (10s, 500ms)")->type_name("DURATION")->capture_default_str();
  sub.add_option("--ops", a.ops, "Run each operation over this many keys instead of for --duration")->type_name("N");
  sub.add_option("--keys", a.keys, "Keys reads pick from (capped to what fits in the pool)")->type_name("N")->capture_default_str();
  sub.add_option("--distribution", a.distribution, "Which keys reads pick")->type_name("CHOICE")->check(CLI::IsMember({"uniform", "zipf"}))->capture_default_str();
  sub.add_option("--key-names", a.key_names, "Key names end in a counter, or in a hash of it (scattered, as engines' hashed keys are)")->type_name("CHOICE")->check(CLI::IsMember({"counter", "hashed"}))->capture_default_str();
  sub.add_option("--key-bytes", a.key_bytes, "Pad key names with zeros to at least this many bytes (0: no padding)")->type_name("N")->capture_default_str();
  sub.add_flag("--metadata-only", a.metadata_only, "Exercise the master alone: PutStart/PutEnd, GetReplicaList, ExistKey; no bytes move");
  sub.add_flag("--blackhole", a.blackhole, "Run against a backend that drops writes and misses reads (no cluster)");
  sub.add_option("--json", a.json, "Also write the results as JSON to FILE")->type_name("FILE");
  sub.add_option("--trace", a.trace, "Replay a trace (JSON lines: timestamp, hash_ids) as an inference engine would")->type_name("FILE");
  sub.add_option("--block-size", a.block_size, "Bytes of one KV block of the trace")->type_name("SIZE")->capture_default_str();
  sub.add_option("--speedup", a.speedup, "Replay at the trace's pace times X; 0: as fast as possible")->type_name("X")->capture_default_str();
  sub.add_option("--compare", a.compare, "Run the same workload against Redis at redis://HOST:PORT")->type_name("URL");
}

}  // namespace

namespace {

// "1.20 0.80 0.50": how busy the machine was, since figures depend on it.
std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return in ? one + " " + five + " " + fifteen : "unknown";
}

struct ClusterFacts {
  uint64_t capacity_bytes = 0;
  size_t segments = 0;
  std::string transfer_path;  // from a probe put+get; empty when no bytes move
};

// Capacity from the master; in cluster mode also one probe object moved
// both ways so the setup can name the transfer path before any figure.
Result<ClusterFacts> Probe(const Config& config, const Plan& plan) {
  ClusterFacts f;
  MC_ASSIGN_OR_RETURN(std::unique_ptr<client::Client> c, client::Client::Connect(config));
  MC_ASSIGN_OR_RETURN(msg::ClusterStatusReply status, c->ClusterStatus());
  f.capacity_bytes = status.capacity_bytes;
  f.segments = status.segments.size();
  if (plan.mode != "cluster") return f;
  std::string key = plan.prefix + "probe";
  std::vector<uint8_t> value(std::min<uint64_t>(plan.workload.value_size, 1 << 20), 0x5a);
  msg::PutOptions options;
  options.replicas = config.client.replicas;
  MC_RETURN_IF_ERROR(c->Put(key, value, options));
  MC_RETURN_IF_ERROR(c->Get(key).status());
  f.transfer_path = c->last_transfer_path();
  (void)c->Remove(key, true);
  return f;
}

std::vector<SetupField> MakeSetup(const Config& config, const Plan& plan, const BenchArgs& a,
                                  const ClusterFacts& f) {
  auto num = [](uint64_t v) { return std::to_string(v); };
  std::vector<SetupField> s = {{"version", MOONCAKE_VERSION}, {"mode", plan.mode},
                               {"cpus", num(std::thread::hardware_concurrency()), true},
                               {"load_average", LoadAverage()}};
  if (plan.mode != "blackhole") {
    s.push_back({"master", config.cluster.master});
    s.push_back({"segments", num(f.segments), true});
    s.push_back({"capacity_bytes", num(f.capacity_bytes), true});
  }
  if (!f.transfer_path.empty()) s.push_back({"transfer_path", f.transfer_path});
  if (config.cluster.protocol == "rdma") {
    // rdma: one-sided over the NICs; rdma+tcp or tcp: a store serves no RDMA.
    s.push_back({"protocol", "rdma"});
    s.push_back({"rdma_devices", config.cluster.device_name.empty() ? "all" : config.cluster.device_name});
  }
  s.push_back({"shm", config.cluster.shm ? "on" : "off"});
  if (!a.trace.empty()) {
    s.push_back({"trace", a.trace});
    s.push_back({"block_size", num(plan.block_size), true});
    s.push_back({"speedup", a.speedup > 0 ? std::to_string(a.speedup) : "0", true});
    return s;
  }
  s.push_back({"ops", a.op});
  s.push_back({"value_size", num(plan.workload.value_size), true});
  s.push_back({"threads", num(plan.workload.threads), true});
  s.push_back({"batch", num(plan.workload.batch), true});
  if (plan.workload.ops) s.push_back({"ops_per_phase", num(plan.workload.ops), true});
  else s.push_back({"duration_s", std::to_string(double(plan.workload.duration_us) / 1e6), true});
  s.push_back({"keys", num(plan.workload.keys), true});
  s.push_back({"distribution", a.distribution});
  s.push_back({"key_names", a.key_names});
  if (plan.key_bytes) s.push_back({"key_bytes", num(plan.key_bytes), true});
  s.push_back({"replicas", num(config.client.replicas), true});
  if (!plan.redis.empty()) s.push_back({"compare", a.compare});
  return s;
}

// Runs every op against one target, in order over its own key space; a
// first op that reads gets the key set written first (not measured).
Result<std::vector<OpResult>> RunOps(const Plan& plan, const TargetFactory& factory,
                                     const std::string& name, bool overwrites) {
  KeySpace keys(plan.prefix, plan.workload.keys, overwrites, plan.hashed_names, plan.key_bytes);
  std::vector<OpResult> out;
  if (plan.ops.front() != Op::kPut) {
    WorkloadOptions preload = plan.workload;
    preload.ops = plan.workload.keys;
    preload.batch = std::min<uint32_t>(std::max<uint32_t>(plan.workload.batch, 32), kMaxBatch);
    preload.progress = false;
    MC_RETURN_IF_ERROR(RunWorkload(factory, name, Op::kPut, preload, keys).status());
  }
  for (Op op : plan.ops) {
    MC_ASSIGN_OR_RETURN(OpResult r, RunWorkload(factory, name, op, plan.workload, keys));
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<OpResult>> RunSideBySide(const Plan& plan, const TargetFactory& factory) {
  MC_ASSIGN_OR_RETURN(std::vector<OpResult> ours, RunOps(plan, factory, "mooncake", false));
  if (plan.redis.empty()) return ours;
  MC_ASSIGN_OR_RETURN(std::vector<OpResult> theirs,
                      RunOps(plan, RedisTargetFactory(plan.redis, kRedisTimeoutUs), "redis", true));
  std::vector<OpResult> rows;
  for (size_t i = 0; i < ours.size(); ++i) {
    rows.push_back(std::move(ours[i]));
    rows.push_back(std::move(theirs[i]));
  }
  return rows;
}

TargetFactory MakeFactory(const Config& config, const Plan& plan) {
  if (plan.mode == "blackhole") return BlackholeTargetFactory();
  if (plan.mode == "metadata-only") return MetadataTargetFactory(config, plan.workload.value_size);
  return MooncakeTargetFactory(config);
}

int Finish(const BenchArgs& a, const std::vector<SetupField>& setup, const std::vector<OpResult>& rows,
           const std::optional<TraceSummary>& trace) {
  // A blackhole misses by design and a trace's lookups miss by nature.
  PrintResults(rows, !a.blackhole && !trace);
  if (trace) PrintTrace(*trace);
  if (!a.json.empty()) {
    std::ofstream out(a.json, std::ios::trunc);
    out << ToJson(setup, rows, trace);
    if (!out) {
      std::fprintf(stderr, "mooncake bench: cannot write '%s'\n", a.json.c_str());
      return kExitFailure;
    }
  }
  for (const OpResult& r : rows) {
    if (r.errors > 0 && r.ops == 0) return kExitFailure;  // nothing worked: say so
  }
  return kExitOk;
}

int RunBench(const BenchArgs& a, CLI::App& sub, const Config& config) {
  auto plan = MakePlan(a, sub);
  if (!plan.ok()) return ReportError("bench", "", plan.status());
  if (!a.json.empty() && !std::ofstream(a.json, std::ios::app)) {
    return ReportError("bench", "", Usage("--json: cannot write '" + a.json + "'"));
  }
  ClusterFacts facts;
  if (plan->mode != "blackhole") {
    auto f = Probe(config, *plan);
    if (!f.ok()) return ReportError("bench", "", f.status());
    facts = *f;
  }
  if (plan->mode == "cluster" && a.trace.empty()) {
    // Reads must find what was written: the key set fits in the pool.
    uint64_t per_key = plan->workload.value_size * std::max<uint32_t>(config.client.replicas, 1);
    auto fit = static_cast<uint64_t>(double(facts.capacity_bytes) * kKeySetPoolShare) / per_key;
    if (fit == 0) return ReportError("bench", "", Usage("--value-size: larger than the pool"));
    plan->workload.keys = std::min(plan->workload.keys, fit);
  }
  std::vector<SetupField> setup = MakeSetup(config, *plan, a, facts);
  PrintSetup(setup);
  TargetFactory factory = MakeFactory(config, *plan);
  if (!a.trace.empty()) {
    auto trace = LoadTrace(a.trace);
    if (!trace.ok()) return ReportError("bench", "", trace.status());
    LiveTraceOptions o{.block_size = plan->block_size,
                       .capacity_blocks = facts.capacity_bytes / plan->block_size,
                       .speedup = a.speedup, .key_prefix = plan->prefix + "b", .file = a.trace};
    auto r = ReplayLive(*trace, factory, "mooncake", o);
    if (!r.ok()) return ReportError("bench", "", r.status());
    return Finish(a, setup, r->ops, r->summary);
  }
  auto rows = RunSideBySide(*plan, factory);
  if (!rows.ok()) return ReportError("bench", "", rows.status());
  return Finish(a, setup, *rows, std::nullopt);
}

}  // namespace

RunFn SetupBench(CLI::App& sub) {
  auto args = std::make_shared<BenchArgs>();
  AddOptions(sub, *args);
  args->cc = std::make_unique<config::CommandConfig>(sub, kSections, false);
  CLI::App* app = &sub;
  return [args, app] {
    return config::RunWithConfig("bench", *args->cc, kSections,
                                 [&](const Config& config) { return RunBench(*args, *app, config); });
  };
}

}  // namespace mc::cli
