#include "transfer/rdma/rdma_sealed.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "common/crypto.h"
#include "transfer/rdma/rdma_engine.h"
#include "transfer/segment.h"
#include "transfer/write_epochs.h"

namespace mc::transfer {

namespace {

constexpr uint64_t kNonceTopBit = 1ull << 63;

uint64_t Regions(const RdmaEpochTable& t) { return WriteEpochs::Regions(t.data_bytes); }

// One sealed op's state across the batches.
struct SealedOp {
  std::optional<RdmaEpochTable> table;
  uint64_t first = 0, count = 0;  // its regions
  size_t look = 0;                // index of its first look word in the scratch
};

// Appends the reads of `op`'s words and masks into `scratch` (at s.look).
void AddLook(const TransferOp& op, const SealedOp& s, uint64_t* scratch,
             std::vector<TransferOp>* batch, std::vector<size_t>* owner, size_t k) {
  for (int part = 0; part < 2; ++part) {
    TransferOp look;
    look.kind = OpKind::kRead;
    look.endpoint = op.endpoint;
    look.grant = op.grant;
    look.remote_offset =
        (part == 0 ? s.table->words_offset() : s.table->masks_offset()) + s.first * 8;
    look.buffer = scratch + s.look + part * s.count;
    look.len = s.count * 8;
    batch->push_back(std::move(look));
    owner->push_back(k);
  }
}

// Runs `batch`; a failed op fails its owner (first failure kept).
void RunFor(RdmaEngine& engine, std::vector<TransferOp>& batch, const std::vector<size_t>& owner,
            std::span<TransferOp> ops) {
  if (batch.empty()) return;
  const Status whole = engine.Batch(batch);  // per-op statuses below
  for (size_t b = 0; b < batch.size(); ++b) {
    TransferOp& op = ops[owner[b]];
    if (!whole.ok() && batch[b].status.ok()) batch[b].status = whole;  // refused whole
    if (batch[b].status.ok() || !op.status.ok()) continue;
    op.status = batch[b].status;
    op.peer_unreachable = batch[b].peer_unreachable;
  }
}

uint64_t LookSeal(const TransferOp& op, const SealedOp& s, const uint64_t* scratch) {
  const uint64_t* words = scratch + s.look;
  const uint64_t* masks = words + s.count;
  // SealOfWords wants the range's offset, words from its first region.
  return WriteEpochs::SealOfWords(words, masks, op.remote_offset, op.len);
}

// Describes each op's peer: its table, or a failed status.
void FindTables(RdmaEngine& engine, std::span<TransferOp> ops, std::vector<SealedOp>& st) {
  for (size_t k = 0; k < ops.size(); ++k) {
    TransferOp& op = ops[k];
    if (!op.status.ok()) continue;
    auto desc = engine.PeerDescriptor(*op.endpoint);
    if (!desc.ok()) {
      op.status = desc.status();
      continue;
    }
    st[k].table = FindEpochTable(**desc);
    if (!st[k].table) {
      op.status = Error(ErrorCode::NOT_SUPPORTED,
                        "segment " + (*desc)->name + " publishes no epoch table for RDMA");
    } else if (op.remote_offset > st[k].table->data_bytes ||
               op.len > st[k].table->data_bytes - op.remote_offset) {
      op.status = Error(ErrorCode::INVALID_READ, "sealed read outside segment " + (*desc)->name);
    }
  }
}

}  // namespace

uint64_t RdmaEpochTable::words_offset() const { return EpochsOffset(data_bytes); }
uint64_t RdmaEpochTable::masks_offset() const { return words_offset() + Regions(*this) * 8; }

uint64_t NewEpochNonce() { return RandomU64() | kNonceTopBit; }

std::string EpochTableBufferName(uint64_t nonce) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(nonce));
  return std::string(kEpochTableBufferPrefix) + hex;
}

uint64_t EpochTableTailBytes(uint64_t data_bytes) {
  return EpochsOffset(data_bytes) + WriteEpochs::Words(data_bytes) * 8 - data_bytes;
}

std::optional<RdmaEpochTable> FindEpochTable(const RdmaSegmentDesc& desc) {
  for (const RdmaBufferDesc& b : desc.buffers) {
    if (b.name.rfind(kEpochTableBufferPrefix, 0) != 0) continue;
    const std::string hex = b.name.substr(kEpochTableBufferPrefix.size());
    char* end = nullptr;
    const uint64_t nonce = std::strtoull(hex.c_str(), &end, 16);
    if (hex.size() != 16 || end != hex.c_str() + hex.size() || (nonce & kNonceTopBit) == 0 ||
        b.addr < desc.buffers[0].addr) {
      return std::nullopt;
    }
    RdmaEpochTable t{b.addr - desc.buffers[0].addr, nonce};
    // The table must lie inside what the buffers from here on cover.
    uint64_t covered = 0;
    for (const RdmaBufferDesc& c : desc.buffers) {
      if (c.addr >= b.addr) covered += c.length;
    }
    if (covered < EpochTableTailBytes(t.data_bytes)) return std::nullopt;
    return t;
  }
  return std::nullopt;
}

Status RdmaSealedReads(RdmaEngine& engine, std::span<TransferOp> ops) {
  std::vector<SealedOp> st(ops.size());
  for (TransferOp& op : ops) {
    op.status = op.kind == OpKind::kRead
                    ? Status::Ok()
                    : Error(ErrorCode::INVALID_PARAMS, "only READs can be sealed");
    op.peer_unreachable = false;
  }
  FindTables(engine, ops, st);
  // One scratch block for every look (two per learner, one per cached seal),
  // registered once for the call rather than once per look.
  size_t words = 0;
  for (size_t k = 0; k < ops.size(); ++k) {
    if (!ops[k].status.ok()) continue;
    st[k].first = WriteEpochs::FirstRegion(ops[k].remote_offset);
    st[k].count = WriteEpochs::RegionCount(ops[k].remote_offset, ops[k].len);
    st[k].look = words;
    words += 2 * st[k].count * (ops[k].seal == 0 ? 2 : 1);
  }
  std::vector<uint64_t> scratch(words);
  const bool registered =
      words > 0 && engine.RegisterBuffer(scratch.data(), words * 8).ok();
  std::vector<TransferOp> batch;
  std::vector<size_t> owner;
  auto run = [&] {
    RunFor(engine, batch, owner, ops);
    batch.clear();
    owner.clear();
  };
  // The second look of a learner goes after its first.
  auto second = [&](size_t k) {
    SealedOp s = st[k];
    if (ops[k].seal == 0) s.look += 2 * s.count;
    return s;
  };
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].status.ok() && ops[k].seal == 0) AddLook(ops[k], st[k], scratch.data(), &batch, &owner, k);
  }
  run();
  for (size_t k = 0; k < ops.size(); ++k) {
    if (!ops[k].status.ok()) continue;
    TransferOp data = ops[k];
    data.sealed = false;
    batch.push_back(std::move(data));
    owner.push_back(k);
  }
  run();
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].status.ok()) AddLook(ops[k], second(k), scratch.data(), &batch, &owner, k);
  }
  run();
  if (registered) (void)engine.UnregisterBuffer(scratch.data());
  Status first;
  for (size_t k = 0; k < ops.size(); ++k) {
    TransferOp& op = ops[k];
    if (op.status.ok()) {
      // A reconnection since the table was found (a restarted store) voids the look.
      auto desc = engine.PeerDescriptor(*op.endpoint);
      auto now = desc.ok() ? FindEpochTable(**desc) : std::nullopt;
      const uint64_t after = LookSeal(op, second(k), scratch.data());
      const uint64_t seal = now && now->nonce == st[k].table->nonce && after != 0
                                ? after ^ st[k].table->nonce
                                : 0;
      if (op.seal == 0) {
        op.seal = seal != 0 && LookSeal(op, st[k], scratch.data()) == after ? seal : 0;
      } else if (seal != op.seal) {
        op.status = Error(ErrorCode::REPLICA_IS_GONE,
                          "range at offset " + std::to_string(op.remote_offset) +
                              " was written or retired since its seal");
      }
    }
    if (!op.status.ok() && first.ok()) first = op.status;
  }
  return first;
}

}  // namespace mc::transfer
