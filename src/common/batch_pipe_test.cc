#include "common/batch_pipe.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <thread>

namespace mc {
namespace {

TEST_CASE("a batch pipe delivers every item once, in order, through few reused batches") {
  constexpr size_t kItems = 100003;  // not a multiple of the batch size
  BatchPipe<std::string> pipe(3, 64);
  std::thread producer([&] {
    size_t next = 0;
    while (next < kItems) {
      auto* b = pipe.TakeEmpty();
      REQUIRE(b != nullptr);
      CHECK(b->count == 0);
      for (; b->count < b->items.size() && next < kItems; ++next)
        b->items[b->count++].assign(std::to_string(next));
      pipe.PushFull(b);
    }
    pipe.Close();
  });
  size_t expect = 0;
  std::vector<const void*> seen;
  while (auto* b = pipe.TakeFull()) {
    for (size_t i = 0; i < b->count; ++i) CHECK(b->items[i] == std::to_string(expect++));
    if (std::find(seen.begin(), seen.end(), b) == seen.end()) seen.push_back(b);
    pipe.GiveBack(b);
  }
  producer.join();
  CHECK(expect == kItems);
  CHECK(seen.size() <= 3);
}

TEST_CASE("a batch pipe's consumer can stop a producer that would go on forever") {
  BatchPipe<int> pipe(2, 8);
  size_t pushed = 0;
  std::thread producer([&] {
    while (auto* b = pipe.TakeEmpty()) {
      b->items[b->count++] = 1;
      pipe.PushFull(b);
      ++pushed;
    }
    pipe.Close();
  });
  auto* first = pipe.TakeFull();
  REQUIRE(first != nullptr);
  pipe.Cancel();
  pipe.GiveBack(first);
  producer.join();
  // Two batches exist: the one the consumer took and one more the producer
  // may have filled; then it waits, sees the cancel and stops.
  CHECK(pushed <= 2);
}

TEST_CASE("a batch pipe closed at once yields nothing") {
  BatchPipe<int> pipe(2, 4);
  pipe.Close();
  CHECK(pipe.TakeFull() == nullptr);
}

}  // namespace
}  // namespace mc
