// The disk tier's share of the HA log (issue 31): the records of disk
// replicas (HaRecord::Kind::kDiskReplica, kDiskRemove; the layout is in
// ha_image.h), their place in the image and its snapshot, and the HaLog's
// DiskReplicaListener calls. The other record kinds live in ha_records.cc.
#pragma once

#include "common/byte_io.h"
#include "masterd/ha_image.h"

namespace mc::masterd {

// The fields of a kDiskReplica record after its kind byte.
void EncodeDiskReplica(ByteWriter& w, const HaRecord& record);
void DecodeDiskReplica(ByteReader& r, HaRecord* record);

}  // namespace mc::masterd
