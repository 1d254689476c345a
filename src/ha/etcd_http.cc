#include "ha/etcd_http.h"

#include <httplib.h>

namespace mc::ha {

namespace {

// gRPC codes etcd's gateway returns for a member that cannot serve now
// (no leader, leader changed, timeout): another member may.
constexpr int kGrpcDeadlineExceeded = 4;
constexpr int kGrpcUnavailable = 14;

std::string B64(const std::string& s) { return JsonString(Base64Encode(s)); }

std::string OpJson(const TxnOp& op) {
  switch (op.kind) {
    case TxnOp::Kind::kPut: {
      std::string body = "{\"requestPut\":{\"key\":" + B64(op.key) + ",\"value\":" + B64(op.value);
      if (op.lease != 0) body += ",\"lease\":\"" + std::to_string(op.lease) + "\"";
      return body + "}}";
    }
    case TxnOp::Kind::kDeleteRange: {
      std::string body = "{\"requestDeleteRange\":{\"key\":" + B64(op.key);
      if (!op.range_end.empty()) body += ",\"range_end\":" + B64(op.range_end);
      return body + "}}";
    }
    case TxnOp::Kind::kRange: {
      std::string body = "{\"requestRange\":{\"key\":" + B64(op.key);
      if (!op.range_end.empty()) body += ",\"range_end\":" + B64(op.range_end);
      if (op.limit != 0) body += ",\"limit\":\"" + std::to_string(op.limit) + "\"";
      return body + "}}";
    }
  }
  return "{}";
}

std::string CompareJson(const Compare& c) {
  std::string body = "{\"key\":" + B64(c.key) + ",\"result\":\"EQUAL\",\"target\":";
  switch (c.target) {
    case Compare::Target::kCreate:
      return body + "\"CREATE\",\"create_revision\":\"" + std::to_string(c.number) + "\"}";
    case Compare::Target::kMod:
      return body + "\"MOD\",\"mod_revision\":\"" + std::to_string(c.number) + "\"}";
    case Compare::Target::kLease:
      return body + "\"LEASE\",\"lease\":\"" + std::to_string(c.number) + "\"}";
    case Compare::Target::kValue:
      return body + "\"VALUE\",\"value\":" + B64(c.value) + "}";
  }
  return "{}";
}

template <typename T, typename F>
std::string JsonList(const std::vector<T>& items, F&& each) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + each(items[i]);
  return out + "]";
}

Result<RangeResult> ParseRange(const Json& reply) {
  RangeResult out;
  out.more = reply["more"].Bool();
  for (const Json& kv : reply["kvs"].items) {
    KeyValue& e = out.kvs.emplace_back();
    MC_ASSIGN_OR_RETURN(e.key, Base64Decode(kv["key"].text));
    MC_ASSIGN_OR_RETURN(e.value, Base64Decode(kv["value"].text));
    e.create_revision = kv["create_revision"].Int();
    e.mod_revision = kv["mod_revision"].Int();
    e.lease = kv["lease"].Int();
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> ParseEtcdEndpoints(std::string_view text) {
  if (text.substr(0, 7) == "etcd://") text.remove_prefix(7);
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t cut = text.find_first_of(",;");
    std::string_view one = text.substr(0, cut);
    text = cut == std::string_view::npos ? std::string_view() : text.substr(cut + 1);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    if (one.empty()) continue;
    if (one.substr(0, 8) == "https://") {
      return Error(ErrorCode::INVALID_PARAMS, "etcd member " + std::string(one) +
                                                  ": https is not supported; use http://");
    }
    if (one.substr(0, 7) == "http://") one.remove_prefix(7);
    while (!one.empty() && one.back() == '/') one.remove_suffix(1);
    const size_t colon = one.rfind(':');
    if (colon == std::string_view::npos || colon + 1 == one.size()) {
      return Error(ErrorCode::INVALID_PARAMS, "etcd member '" + std::string(one) +
                                                  "' has no port (host:2379)");
    }
    out.emplace_back(one);
  }
  if (out.empty()) return Error(ErrorCode::INVALID_PARAMS, "no etcd member given");
  return out;
}

struct EtcdHttp::Member {
  std::string host_port;
  std::unique_ptr<httplib::Client> http;
};

namespace {

// A client of member `host_port` with these timeouts.
std::unique_ptr<httplib::Client> MemberClient(const std::string& host_port,
                                              const EtcdHttpOptions& options) {
  auto http = std::make_unique<httplib::Client>("http://" + host_port);
  http->set_keep_alive(true);
  // A request goes out as two writes (headers, body): without this, Nagle
  // holds the body for the server's delayed ACK, 40 ms a commit.
  http->set_tcp_nodelay(true);
  http->set_connection_timeout(static_cast<time_t>(options.connect_timeout_us / 1000000),
                               static_cast<time_t>(options.connect_timeout_us % 1000000));
  http->set_read_timeout(static_cast<time_t>(options.request_timeout_us / 1000000),
                         static_cast<time_t>(options.request_timeout_us % 1000000));
  http->set_write_timeout(static_cast<time_t>(options.request_timeout_us / 1000000),
                          static_cast<time_t>(options.request_timeout_us % 1000000));
  return http;
}

}  // namespace

EtcdHttp::EtcdHttp(std::vector<std::string> endpoints, EtcdHttpOptions options)
    : endpoints_(std::move(endpoints)), options_(options) {
  for (const std::string& e : endpoints_) {
    auto m = std::make_unique<Member>();
    m->host_port = e;
    m->http = MemberClient(e, options_);
    members_.push_back(std::move(m));
  }
}

EtcdHttp::~EtcdHttp() = default;

Result<std::unique_ptr<EtcdHttp>> EtcdHttp::Open(std::string_view endpoints,
                                                 EtcdHttpOptions options) {
  MC_ASSIGN_OR_RETURN(std::vector<std::string> list, ParseEtcdEndpoints(endpoints));
  return std::unique_ptr<EtcdHttp>(new EtcdHttp(std::move(list), options));
}

Result<Json> EtcdHttp::Post(const char* path, const std::string& body) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string last_error;
  for (size_t tried = 0; tried < members_.size(); ++tried) {
    Member& m = *members_[current_];
    auto res = m.http->Post(path, body, "application/json");
    if (!res) {
      last_error = m.host_port + ": " + httplib::to_string(res.error());
      current_ = (current_ + 1) % members_.size();
      continue;
    }
    auto parsed = ParseGatewayJson(res->body);
    if (!parsed.ok()) return parsed.status();
    if (res->status == 200) return parsed;
    const int code = static_cast<int>((*parsed)["code"].Int());
    const std::string message = m.host_port + ": " + (*parsed)["message"].text;
    if (code == kGrpcUnavailable || code == kGrpcDeadlineExceeded) {
      last_error = message;
      current_ = (current_ + 1) % members_.size();
      continue;
    }
    return Error(ErrorCode::INVALID_PARAMS, "etcd refused " + std::string(path) + ": " + message);
  }
  return Error(ErrorCode::RPC_FAIL, "no etcd member answered " + std::string(path) + " (last: " +
                                        last_error + ")");
}

Result<TxnResult> EtcdHttp::Commit(const Txn& txn) {
  const std::string body = "{\"compare\":" + JsonList(txn.compare, CompareJson) +
                           ",\"success\":" + JsonList(txn.success, OpJson) +
                           ",\"failure\":" + JsonList(txn.failure, OpJson) + "}";
  MC_ASSIGN_OR_RETURN(Json reply, Post("/v3/kv/txn", body));
  TxnResult out;
  out.succeeded = reply["succeeded"].Bool();
  out.revision = reply["header"]["revision"].Int();
  for (const Json& r : reply["responses"].items) {
    const Json& range = r["response_range"];
    if (range.kind != Json::Kind::kObject) continue;
    MC_ASSIGN_OR_RETURN(RangeResult rr, ParseRange(range));
    out.ranges.push_back(std::move(rr));
  }
  return out;
}

Result<RangeResult> EtcdHttp::Range(const std::string& key, const std::string& range_end,
                                    int64_t limit) {
  TxnOp op{.kind = TxnOp::Kind::kRange, .key = key, .range_end = range_end, .limit = limit};
  std::string body = OpJson(op);
  // OpJson wraps the request for a txn: {"requestRange":{...}}; the range
  // endpoint takes the inner object.
  body = body.substr(std::string("{\"requestRange\":").size());
  body.pop_back();
  MC_ASSIGN_OR_RETURN(Json reply, Post("/v3/kv/range", body));
  return ParseRange(reply);
}

Result<int64_t> EtcdHttp::LeaseGrant(int64_t ttl_s) {
  MC_ASSIGN_OR_RETURN(Json reply,
                      Post("/v3/lease/grant", "{\"TTL\":\"" + std::to_string(ttl_s) + "\"}"));
  if (!reply["error"].text.empty()) {
    return Error(ErrorCode::INVALID_PARAMS, "etcd lease grant: " + reply["error"].text);
  }
  return reply["ID"].Int();
}

Result<int64_t> EtcdHttp::LeaseKeepAlive(int64_t lease_id) {
  MC_ASSIGN_OR_RETURN(Json reply, Post("/v3/lease/keepalive",
                                       "{\"ID\":\"" + std::to_string(lease_id) + "\"}"));
  // A stream endpoint: one {"result":...} per request sent.
  return reply["result"]["TTL"].Int();
}

Status EtcdHttp::LeaseRevoke(int64_t lease_id) {
  auto reply = Post("/v3/lease/revoke", "{\"ID\":\"" + std::to_string(lease_id) + "\"}");
  return reply.ok() ? Status::Ok() : reply.status();
}

Status EtcdHttp::Compact(int64_t revision) {
  auto reply =
      Post("/v3/kv/compaction", "{\"revision\":\"" + std::to_string(revision) + "\"}");
  return reply.ok() ? Status::Ok() : reply.status();
}

Result<size_t> EtcdHttp::RaftLeaderEndpoint() {
  // A client of its own per member, with short timeouts: the calls that
  // ask wait meanwhile, and a member that is cut off (not refusing, just
  // silent) must not hold them for a request timeout every time.
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    auto probe = MemberClient(endpoints_[i], {.connect_timeout_us = kRaftLeaderProbeTimeoutUs,
                                              .request_timeout_us = kRaftLeaderProbeTimeoutUs});
    auto res = probe->Post("/v3/maintenance/status", "{}", "application/json");
    if (!res || res->status != 200) continue;
    auto reply = ParseGatewayJson(res->body);
    if (!reply.ok()) continue;
    // Member ids are uint64 (as strings in the gateway's JSON): compare
    // the text.
    const std::string& leader = (*reply)["leader"].text;
    if (!leader.empty() && leader != "0" && leader == (*reply)["header"]["member_id"].text)
      return i;
  }
  return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
               "no etcd member of the list says it is the raft leader");
}

Result<StatusResult> EtcdHttp::MemberStatus() {
  MC_ASSIGN_OR_RETURN(Json reply, Post("/v3/maintenance/status", "{}"));
  return StatusResult{.db_size_bytes = reply["dbSize"].Int(),
                      .db_size_in_use_bytes = reply["dbSizeInUse"].Int(),
                      .revision = reply["header"]["revision"].Int()};
}

}  // namespace mc::ha
