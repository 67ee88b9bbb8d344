/*
 * generator.cpp
 *	  Set-up of a worker id's generator; the hot path is inline in the
 *	  header.
 */
#include "generator.hpp"

namespace snowflake {

void
SlotGenerator::Start(const Layout &layout, uint32_t node_id, uint32_t worker_id,
					 int64_t max_drift_ms)
{
	fixed_bits_ = (static_cast<uint64_t>(node_id) << layout.NodeShift()) |
		(static_cast<uint64_t>(worker_id) << layout.WorkerShift());
	timestamp_shift_ = layout.TimestampShift();
	max_sequence_ = layout.MaxSequence();
	max_timestamp_ = layout.MaxTimestamp();
	max_drift_ms_ = max_drift_ms;
}

}							/* namespace snowflake */
