#include "ha/etcd.h"

namespace mc::ha {

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<uint8_t>(end.back()) != 0xff) {
      end.back() = static_cast<char>(static_cast<uint8_t>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // etcd: "\0" as range_end means every key from `key` on
}

Status Put(EtcdKv& kv, const std::string& key, const std::string& value, int64_t lease) {
  Txn txn;
  txn.success.push_back({.kind = TxnOp::Kind::kPut, .key = key, .value = value, .lease = lease});
  auto r = kv.Commit(txn);
  return r.ok() ? Status::Ok() : r.status();
}

Result<std::vector<KeyValue>> Get(EtcdKv& kv, const std::string& key) {
  MC_ASSIGN_OR_RETURN(RangeResult r, kv.Range(key, "", 1));
  return std::move(r.kvs);
}

}  // namespace mc::ha
