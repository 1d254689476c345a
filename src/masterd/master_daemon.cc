#include "masterd/master_daemon.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "common/sd_notify.h"
#include "common/signals.h"
#include "masterd/admin_http.h"
#include "masterd/ha_master.h"
#include "masterd/journal.h"
#include "masterd/retirer.h"
#include "masterd/rpc_glue.h"
#include "masterd/service.h"
#include "masterd/tier_admin.h"
#include "metadata/metadata_server.h"
#include "net/tls.h"
#include "tls/tls_setup.h"

namespace mc::masterd {

namespace {
constexpr uint64_t kTickIntervalMs = 100;
constexpr const char* kStateFileName = "master.db";

// Creates DIR (one level, like the systemd unit's StateDirectory) if needed.
Status EnsureDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) return Status::Ok();
  return Error(ErrorCode::INTERNAL_ERROR,
               "cannot create data dir " + dir + ": " + std::strerror(errno));
}

// Opens DIR/master.db; null with --data-dir none.
Result<std::unique_ptr<Journal>> OpenJournal(const MasterConfig& mc) {
  if (mc.data_dir == "none") return std::unique_ptr<Journal>();
  MC_RETURN_IF_ERROR(EnsureDir(mc.data_dir));
  const std::string path = mc.data_dir + "/" + kStateFileName;
  // The file holds every store's access key (what its transfer grants are
  // signed with): owner-only, whatever the umask or an older file said.
  // SQLite gives its -wal and -shm files the database file's mode.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || ::fchmod(fd, 0600) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return Error(ErrorCode::INTERNAL_ERROR,
                 "cannot open " + path + " owner-only: " + std::strerror(err));
  }
  ::close(fd);
  MC_ASSIGN_OR_RETURN(FsyncMode mode, ParseFsyncMode(mc.fsync));  // the config checked it
  auto journal = Journal::Open(path, mc.stripe_size_bytes, {.fsync = mode});
  if (journal.ok()) MC_LOG(INFO) << "journal " << path << ", fsync " << FsyncModeName(mode);
  return journal;
}

// Returns the heap's free pages to the system: a load's scratch arrays and
// tables' old copies freed in the middle of a heap stay resident otherwise.
// (A fixed M_MMAP_THRESHOLD instead, every large block mapped, was measured
// worse: 136.5 vs 126.4 B/object after a 10M fill, and stalls from fresh
// page faults.)
void TrimHeap() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

// Rebuilds the service's state from the journal before anything is served.
Status LoadState(Journal& journal, MasterService& service) {
  const uint64_t start_us = SystemClock::Instance().NowUs();
  MC_ASSIGN_OR_RETURN(Journal::LoadStats stats,
                      service.WithState([&](master::MasterState& state) {
                        auto loaded = journal.LoadInto(state, start_us);
                        state.RestartClientClocks(SystemClock::Instance().NowUs());
                        return loaded;
                      }));
  service.AdoptLoadedSegments();
  MC_RETURN_IF_ERROR(service.LoadTier(&journal));
  TrimHeap();
  MC_LOG(INFO) << "state loaded from " << journal.path() << ": " << stats.segments
               << " segments, " << stats.objects << " objects in "
               << (SystemClock::Instance().NowUs() - start_us) / 1000 << " ms (rows "
               << stats.rows_us / 1000 << " ms, index " << stats.build_us / 1000 << " ms)";
  return Status::Ok();
}

}  // namespace

int RunMaster(const Config& config) {
  if (config.ha.enable_ha && config.ha.etcd.empty()) {
    std::fprintf(stderr, "mooncake master: error: --enable-ha needs --ha-etcd (--etcd_endpoints)\n");
    return 2;
  }
  const MasterConfig& mc = config.master;
  if (mc.promotion_on_hit && !(mc.enable_offload || mc.offload_on_evict)) {
    std::fprintf(stderr, "mooncake master: error: --promotion-on-hit needs the disk tier "
                         "(--enable-offload)\n");
    return 2;
  }
  // With HA the disk replicas live in the HA log (ha_tier_records.cc).
  if (!config.ha.etcd.empty()) return RunHaMaster(config);
  InstallStopSignals();
  InstallReloadSignal();
  // One server context for every port: RPC, admin HTTP, embedded metadata.
  auto tls = MasterServerTls(config.tls);
  if (!tls.ok()) {
    std::fprintf(stderr, "mooncake master: error: %s\n", tls.status().message().c_str());
    return 2;
  }
  std::function<bool(ssl_ctx_st&)> http_tls = HttpServerTls(*tls);
  auto journal = OpenJournal(mc);
  if (!journal.ok()) {
    std::fprintf(stderr, "mooncake master: refusing to start: %s\n",
                 journal.status().ToString().c_str());
    return 1;
  }
  MasterService service(mc, SystemClock::Instance(), journal->get());
  auto retirer = MakeRetirer(config);
  if (!retirer.ok()) {
    std::fprintf(stderr, "mooncake master: error: %s\n", retirer.status().message().c_str());
    return 2;
  }
  service.SetRetirer(retirer->get());
  if (*journal) {
    if (Status st = LoadState(**journal, service); !st.ok()) {
      std::fprintf(stderr, "mooncake master: refusing to start: %s\n", st.ToString().c_str());
      return 1;
    }
    // Before any space is handed out: a RETIRE that failed before the
    // restart was quarantined in memory only (MasterService::RetireFreeSpace).
    (void)service.RetireFreeSpace();
  }

  std::unique_ptr<metadata::MetadataServer> meta;
  if (mc.enable_http_metadata_server) {
    MetadataServerConfig mcfg = config.metadata_server;
    mcfg.host = mc.http_metadata_server_host;
    mcfg.port = mc.http_metadata_server_port;
    mcfg.auth_token = config.cluster.auth_token;  // the cluster's token guards writes
    auto m = metadata::MetadataServer::Open(mcfg);
    Status st = m.ok() ? (*m)->Start(mcfg.host, mcfg.port, http_tls) : m.status();
    if (!st.ok()) {
      std::fprintf(stderr, "mooncake master: embedded metadata server: %s\n", st.ToString().c_str());
      return 1;
    }
    meta = std::move(*m);
    MC_LOG(INFO) << "embedded metadata server listening on " << mcfg.host << ":" << meta->port();
  }

  // RPC first: /health answers only once the master serves, so a check of
  // it (or a start-up time measured by it) means what it says.
  std::unique_ptr<JournalGate> gate;
  if (*journal) gate = std::make_unique<JournalGate>(**journal);
  auto rpc = StartRpcServer(service, config, gate.get(), *tls);
  if (!rpc.ok()) {
    std::fprintf(stderr, "mooncake master: %s\n", rpc.status().ToString().c_str());
    return 1;
  }
  AdminHttp admin(service, journal->get(), config.cluster.auth_token, http_tls);
  if (Status st = admin.Start(AdminHost(mc), mc.metrics_port); !st.ok()) {
    std::fprintf(stderr, "mooncake master: %s\n", st.ToString().c_str());
    (*rpc)->Stop();
    return 1;
  }
  MC_LOG(INFO) << "master listening on " << mc.rpc_address << ":" << mc.rpc_port
               << " (admin http on port " << mc.metrics_port << ")";
  NotifyServiceManager("READY=1");  // RPC and admin HTTP both accept now

  uint64_t since_log_us = 0;
  int exit_code = 0;
  while (!WaitForStop(kTickIntervalMs)) {
    if (*journal && !(*journal)->failure().ok()) {
      // The state in memory is ahead of the file: stop rather than answer.
      std::fprintf(stderr, "mooncake master: %s\n", (*journal)->failure().ToString().c_str());
      exit_code = 1;
      break;
    }
    service.Tick();
    if (TakeReloadRequest()) ReloadTls(tls->get());
    since_log_us += kTickIntervalMs * 1000;
    if (mc.metrics_log_interval_us > 0 && since_log_us >= mc.metrics_log_interval_us) {
      since_log_us = 0;
      MC_LOG(INFO) << "Master Metrics: " << service.Summary() << TierSummary(service);
    }
  }
  MC_LOG(INFO) << "stopping master";
  NotifyServiceManager("STOPPING=1");
  (*rpc)->Stop();
  admin.Stop();
  if (meta) meta->Stop();
  // The journal, destroyed after the service, still commits what is queued.
  service.LeaveStateToExit();
  return exit_code;
}

}  // namespace mc::masterd
