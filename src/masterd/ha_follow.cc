#include "masterd/ha_follow.h"

#include "common/log.h"

namespace mc::masterd {

namespace {

// Loads the snapshot when it is past `image`; false when it is not (or it
// was replaced while read: the next round reads the new one).
Result<bool> LoadNewerSnapshot(ha::FencedLog& log, HaImage& image) {
  MC_ASSIGN_OR_RETURN(std::optional<ha::SnapshotInfo> info, log.ReadSnapshotInfo());
  if (!info || info->index <= image.index()) return false;
  MC_ASSIGN_OR_RETURN(std::optional<ha::Snapshot> snap, log.ReadSnapshot());
  if (!snap) return false;
  MC_RETURN_IF_ERROR(image.Restore(snap->data));
  image.set_index(snap->index);
  MC_LOG(INFO) << "HA: loaded the snapshot of entry " << snap->index << " (" << image.segments()
               << " segments, " << image.objects() << " objects)";
  return true;
}

}  // namespace

Status FollowHaLog(ha::FencedLog& log, HaImage& image, bool* caught_up) {
  *caught_up = false;
  for (int round = 0; round < kMaxReadsPerFollow; ++round) {
    MC_ASSIGN_OR_RETURN(std::vector<ha::LogEntry> entries, log.ReadAfter(image.index()));
    if (entries.empty() || entries.front().index != image.index() + 1) {
      // The log was trimmed past us (a snapshot covers the missing entries),
      // or the next entry is not written (yet): a gap, where we wait.
      MC_ASSIGN_OR_RETURN(bool loaded, LoadNewerSnapshot(log, image));
      if (loaded) continue;
      *caught_up = true;
      return Status::Ok();
    }
    for (const ha::LogEntry& e : entries) {
      if (e.index != image.index() + 1) {
        *caught_up = true;  // a gap in the middle of the read
        return Status::Ok();
      }
      if (Status st = image.ApplyEntry(e.data); !st.ok()) {
        return Error(ErrorCode::INTERNAL_ERROR,
                     "HA log entry " + std::to_string(e.index) + ": " + st.ToString());
      }
      image.set_index(e.index);
    }
  }
  return Status::Ok();
}

}  // namespace mc::masterd
