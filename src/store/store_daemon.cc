#include "store/store_daemon.h"

#include <cstring>
#include <memory>

#include "common/crypto.h"
#include "common/log.h"
#include "common/sd_notify.h"
#include "common/signals.h"
#include "store/segment_host.h"
#include "tls/tls_setup.h"

namespace mc::store {

namespace {
constexpr uint64_t kStopPollMs = 200;
}  // namespace

Status RunStore(const Config& config) {
  InstallStopSignals();
  InstallReloadSignal();
  msg::ClientId id;
  std::string rid = RandomBytes(16);
  std::memcpy(&id.hi, rid.data(), 8);
  std::memcpy(&id.lo, rid.data() + 8, 8);
  MC_ASSIGN_OR_RETURN(std::unique_ptr<SegmentHost> host, SegmentHost::Create(config, id));
  MC_ASSIGN_OR_RETURN(bool mounted, host->Mount(WaitForStop));
  if (!mounted) return Status::Ok();
  host->Start();
  MC_LOG(INFO) << "store ready: segment " << host->Describe();
  NotifyServiceManager("READY=1");  // mounted: the master hands out this segment
  Status outcome;
  while (!WaitForStop(kStopPollMs)) {
    outcome = host->failure();
    if (!outcome.ok()) break;
    if (TakeReloadRequest()) LogTlsReload(host->ReloadTls());
  }
  MC_LOG(INFO) << "stopping";
  NotifyServiceManager("STOPPING=1");
  host->Stop();
  return outcome;
}

}  // namespace mc::store
