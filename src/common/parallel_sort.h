// ParallelSort: std::sort on two cores for large arrays (the master's
// start-up sorts tens of millions of entries while the other core idles).
//
// Partitions around the median of a sample of the elements, then sorts the
// two sides at once, one on a thread of its own: no extra memory, which a
// merge of two sorted halves would need (and on a VM where fresh pages
// cost, memory is time). Many elements equal to the pivot all go right, so
// the split can be uneven; the result is sorted either way. Not stable, as
// std::sort is not.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <thread>
#include <vector>

namespace mc {

// Below this many elements a second thread costs more than it saves.
inline constexpr size_t kParallelSortMinElements = size_t{1} << 20;

template <typename It, typename Less>
void ParallelSort(It first, It last, Less less) {
  const auto n = static_cast<size_t>(last - first);
  if (n < kParallelSortMinElements) {
    std::sort(first, last, less);
    return;
  }
  // The median of 255 elements spread over the array.
  constexpr size_t kSamples = 255;
  using Value = typename std::iterator_traits<It>::value_type;
  std::vector<Value> sample;
  sample.reserve(kSamples);
  for (size_t i = 0; i < kSamples; ++i) sample.push_back(first[i * (n / kSamples)]);
  std::nth_element(sample.begin(), sample.begin() + kSamples / 2, sample.end(), less);
  const Value pivot = sample[kSamples / 2];
  It middle = std::partition(first, last, [&](const Value& v) { return less(v, pivot); });
  std::thread left([&] { std::sort(first, middle, less); });
  std::sort(middle, last, less);
  left.join();
}

template <typename It>
void ParallelSort(It first, It last) {
  ParallelSort(first, last, std::less<>());
}

}  // namespace mc
