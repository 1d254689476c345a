// What the admin HTTP endpoint shows of a master in an HA group
// (/role, /leader, /ha_status, the HA part of /metrics); implemented by
// HaMaster (ha_master.h). Thread-safe.
#pragma once

#include <string>

namespace mc::masterd {

class PrometheusText;

class HaStatusSource {
 public:
  virtual ~HaStatusSource() = default;
  // "leader" or "standby" (the reference's /role).
  virtual std::string Role() const = 0;
  // The reference's /ha_status: "starting", "standby", "catching_up",
  // "serving" or "stopping".
  virtual std::string State() const = 0;
  // {"present":true,"leader_address":"h:p","view_version":N} (the reference's /leader).
  virtual std::string LeaderJson() const = 0;
  virtual void AppendMetrics(PrometheusText& p) const = 0;
  // " | HA: leader term T entry E" for the summary line.
  virtual std::string Summary() const = 0;
};

}  // namespace mc::masterd
