// DummyPuts: a dummy client's own puts (issue 30 point 6). A put through
// the standalone client (`mooncake client`) costs a hop between two
// processes on top of the master's round trips; the dummy can do what that
// client would, itself: it holds a Client of its own (no segment, protocol
// tcp: same-host replicas are written through the mapped segment, others
// over TCP), connected to the standalone client's master with its token and
// TLS files, and puts with one BatchPutStart, the copies and one
// BatchPutEnd, as an embedded client does.
//
// The keys under way are in the put journal (client/dummy_journal.h) the
// standalone client maps: if the dummy dies mid-put, that client revokes
// them, so no partial object stays and its space is freed at once (or, if
// the standalone client is gone too, at the master's put timeout).
// Upserts still go through the standalone client (the other dummies'
// direct reads learn of them there: client/dummy_forgets.h); so do all puts
// of a standalone client with protocol rdma, which holds the host's NIC
// state.
//
// Thread-safe: Put calls are serialized (one journal).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/dummy_journal.h"
#include "config/config.h"
#include "msg/dummy_messages.h"

namespace mc::client {

// What a standalone client with `config` tells its dummies (DummyDirectPuts);
// an empty `master` (protocol rdma) means "put through me".
msg::DummyDirectPutsReply DirectPutsSettings(const Config& config);
// The configuration of a dummy's put client from those settings.
Config DirectPutsConfig(const msg::DummyDirectPutsReply& settings);

class DummyPuts {
 public:
  // A journal only: Connect once the standalone client answered.
  static Result<std::unique_ptr<DummyPuts>> Create();
  // Connects the put client (a ClusterStatus round trip) and names it the
  // journal's owner. Idempotent: the client of a first call stays.
  Status Connect(const msg::DummyDirectPutsReply& settings);
  bool connected() const;
  int journal_fd() const { return journal_->fd(); }

  // The puts of `keys`, or nullopt when they were not tried (not connected,
  // or the keys do not fit the journal).
  std::optional<std::vector<Status>> Put(const std::vector<std::string>& keys,
                                         const std::vector<Client::ConstParts>& parts,
                                         const msg::PutOptions& options);
  Client::PathCounts path_counts() const;
  std::string last_transfer_path() const;

 private:
  explicit DummyPuts(std::unique_ptr<DummyJournal> j) : journal_(std::move(j)) {}
  std::unique_ptr<DummyJournal> journal_;
  mutable std::mutex mu_;  // the journal, and client_ while it is set
  std::unique_ptr<Client> client_;
};

}  // namespace mc::client
