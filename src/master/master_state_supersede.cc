// MasterState: a writer whose upsert (or put) of a key a later upsert took
// over learns it at its PutEnd, which fails with INVALID_WRITE, instead of
// being told OK for a version that never became the key's.
//
// The reference answers such an End with an error too: its UpsertStart makes
// the new writer the object's client, and PutEnd refuses any other client
// (ILLEGAL_CLIENT). Ours refuses a non-owner's end of a put in flight with
// INVALID_WRITE already (CheckPutOwner), so a superseded upsert's end gets
// the same code whether the later upsert has ended or not. A retried PutEnd
// of a version that did become the key's still answers OK. Two upserts of one
// key by one client cannot be told apart by a PutEnd (it names the client
// and the key): the later one is ended by either, as before.
#include <algorithm>

#include "master/master_state.h"
#include "master/master_state_internal.h"

namespace mc::master {

void MasterState::NoteSuperseded(std::string_view key, const msg::ClientId& writer,
                                 const msg::ClientId& by, uint64_t until_us) {
  if (writer == by || superseded_count_ >= kMaxSuperseded) return;
  auto it = superseded_.find(key);
  if (it == superseded_.end()) it = superseded_.emplace(std::string(key), std::vector<Superseded>{}).first;
  for (Superseded& s : it->second) {
    if (s.writer == writer) {
      s.until_us = std::max(s.until_us, until_us);
      return;
    }
  }
  it->second.push_back({writer, until_us});
  ++superseded_count_;
}

bool MasterState::TakeSuperseded(std::string_view key, const msg::ClientId& writer,
                                 uint64_t now_us) {
  auto it = superseded_.find(key);
  if (it == superseded_.end()) return false;
  auto& list = it->second;
  auto s = std::find_if(list.begin(), list.end(),
                        [&](const Superseded& x) { return x.writer == writer; });
  if (s == list.end()) return false;
  const bool in_force = s->until_us > now_us;
  list.erase(s);
  --superseded_count_;
  if (list.empty()) superseded_.erase(it);
  return in_force;
}

bool MasterState::IsSuperseded(std::string_view key, const msg::ClientId& writer,
                               uint64_t now_us) const {
  auto it = superseded_.find(key);
  if (it == superseded_.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(), [&](const Superseded& s) {
    return s.writer == writer && s.until_us > now_us;
  });
}

void MasterState::ExpireSuperseded(uint64_t now_us) {
  for (auto it = superseded_.begin(); it != superseded_.end();) {
    superseded_count_ -= std::erase_if(it->second, [&](const Superseded& s) {
      return s.until_us <= now_us;
    });
    it = it->second.empty() ? superseded_.erase(it) : std::next(it);
  }
}

}  // namespace mc::master
