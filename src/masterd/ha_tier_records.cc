// The disk tier's share of the HA log (issue 31): disk replicas in the
// image and its snapshot, and the HaLog's DiskReplicaListener calls. Their
// records' layout is in ha_image.h, their coding in ha_records.cc.
#include "masterd/ha_image.h"
#include "masterd/ha_log.h"

namespace mc::masterd {

Status HaImage::ApplyDisk(const HaRecord& record) {
  if (record.kind == HaRecord::Kind::kDiskReplica) {
    disk_[record.name] = {record.disk_id, record.size_bytes};
  } else {
    disk_.erase(record.name);  // unknown is fine, as for kRemove
  }
  return Status::Ok();
}

void HaImage::SnapshotDisk(std::string* out) const {
  HaRecord rec{.kind = HaRecord::Kind::kDiskReplica};
  for (const auto& [key, d] : disk_) {
    rec.name = key;
    rec.disk_id = d.disk_id;
    rec.size_bytes = d.size_bytes;
    EncodeHaRecord(rec, out, nullptr);
  }
}

Status HaImage::ForEachDiskReplica(const DiskReplicaVisitor& visit) const {
  for (const auto& [key, d] : disk_) visit(key, d.disk_id, d.size_bytes);
  return Status::Ok();
}

void HaLog::OnDiskReplica(const std::string& key, const std::string& disk_id,
                          uint64_t size_bytes) {
  Append(this, {.kind = HaRecord::Kind::kDiskReplica, .name = key, .disk_id = disk_id,
                .size_bytes = size_bytes});
}

void HaLog::OnDiskReplicaRemoved(const std::string& key) {
  Append(this, {.kind = HaRecord::Kind::kDiskRemove, .name = key});
}

}  // namespace mc::masterd
