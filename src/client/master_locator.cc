#include "client/master_locator.h"

#include <memory>
#include <mutex>
#include <vector>

#include "ha/leader_lookup.h"

namespace mc::client {

namespace {

class ListLocator {
 public:
  explicit ListLocator(std::vector<std::string> masters) : masters_(std::move(masters)) {}
  Result<std::string> Locate(bool moved_on) {
    std::lock_guard<std::mutex> lock(mu_);
    if (moved_on) current_ = (current_ + 1) % masters_.size();
    return masters_[current_];
  }

 private:
  const std::vector<std::string> masters_;
  std::mutex mu_;
  size_t current_ = 0;  // the one that answered last
};

class EtcdLocator {
 public:
  explicit EtcdLocator(std::string etcd) : etcd_(std::move(etcd)), cluster_(ha::ClientClusterName()) {}
  Result<std::string> Locate(bool moved_on) {
    std::lock_guard<std::mutex> lock(mu_);
    if (moved_on || leader_.empty()) {
      MC_ASSIGN_OR_RETURN(leader_, ha::LookupLeader(etcd_, cluster_));
    }
    return leader_;
  }

 private:
  const std::string etcd_;
  const std::string cluster_;
  std::mutex mu_;
  std::string leader_;  // the last the leader key named
};

}  // namespace

std::function<Result<std::string>(bool moved_on)> MasterLocator(const std::string& address) {
  if (ha::IsEtcdAddress(address)) {
    auto locator = std::make_shared<EtcdLocator>(address);
    return [locator](bool moved_on) { return locator->Locate(moved_on); };
  }
  std::vector<std::string> masters;
  size_t start = 0;
  while (start <= address.size()) {
    size_t comma = address.find_first_of(",;", start);
    if (comma == std::string::npos) comma = address.size();
    std::string one = address.substr(start, comma - start);
    while (!one.empty() && one.front() == ' ') one.erase(0, 1);
    while (!one.empty() && one.back() == ' ') one.pop_back();
    if (!one.empty()) masters.push_back(one);
    start = comma + 1;
  }
  if (masters.size() <= 1) return nullptr;
  auto locator = std::make_shared<ListLocator>(std::move(masters));
  return [locator](bool moved_on) { return locator->Locate(moved_on); };
}

}  // namespace mc::client
