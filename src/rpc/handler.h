// Handler: what the RPC server calls for each decoded master request.
//
// One pure virtual method per row of the operation table (proto/ops.h), so
// a handler that misses an operation does not compile. The server calls
// them from its I/O threads, concurrently: implementations must be
// thread-safe and should not block (they run inline on the event loop).
// An operation whose reply is Empty answers a Status, any other a
// Result<Reply>; each takes its request (Empty for RemoveAll and
// ClusterStatus). A batch form that is the single form once per element is
// the implementation's explicit choice: EachItem below.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "proto/codec.h"

namespace mc::rpc {

// What a handler answers for `op`: Status when the reply is Empty.
template <proto::Opcode op>
using Answer = std::conditional_t<std::is_same_v<typename proto::OpTraits<op>::Reply, proto::Empty>,
                                  Status, Result<typename proto::OpTraits<op>::Reply>>;
template <proto::Opcode op>
using RequestOf = typename proto::OpTraits<op>::Request;

class Handler {
 public:
  virtual ~Handler() = default;

#define MC_RPC_HANDLER_METHOD(name, value, Req, Rep, kind) \
  virtual Answer<proto::Opcode::k##name> name(const RequestOf<proto::Opcode::k##name>& req) = 0;
  MC_MASTER_OPS(MC_RPC_HANDLER_METHOD)
#undef MC_RPC_HANDLER_METHOD
};

template <typename R>
struct ResultValue;
template <typename T>
struct ResultValue<Result<T>> {
  using type = T;
};

// A batch answered by `one` per element, in order: Batch<Status> when `one`
// answers a Status, Batch<BatchItem<T>> when it answers a Result<T>. For a
// handler whose batch form has nothing to gain over the single one.
template <typename Req, typename F>
auto EachItem(const msg::Batch<Req>& reqs, F one) {
  using One = std::invoke_result_t<F&, const Req&>;
  if constexpr (std::is_same_v<One, Status>) {
    msg::Batch<Status> out;
    out.reserve(reqs.size());
    for (const Req& r : reqs) out.push_back(one(r));
    return Result<msg::Batch<Status>>(std::move(out));
  } else {
    using T = typename ResultValue<One>::type;
    msg::Batch<msg::BatchItem<T>> out;
    out.reserve(reqs.size());
    for (const Req& r : reqs) {
      One a = one(r);
      if (a.ok()) {
        out.push_back(msg::BatchItem<T>{Status::Ok(), std::move(a).value()});
      } else {
        out.push_back(msg::BatchItem<T>{a.status(), T{}});
      }
    }
    return Result<msg::Batch<msg::BatchItem<T>>>(std::move(out));
  }
}

// BatchPutStartEx's requests as BatchPutStart's: the placement rides in
// each PutStartRequest's options.
msg::Batch<msg::PutStartRequest> WithoutEx(const msg::Batch<msg::PutStartExRequest>& req);

// Decodes `payload` as the request of `op`, calls `handler` and appends the
// encoded reply payload to `out`. A payload that does not decode gets a
// PROTOCOL_ERROR reply, an unknown opcode NOT_SUPPORTED; never throws.
// Hello/Auth are not operations (the server handles them) and get
// PROTOCOL_ERROR here.
void Dispatch(Handler& handler, proto::Opcode op, std::string_view payload, std::string* out);

}  // namespace mc::rpc
